"""Authentication results and authorization for the API server, as pure functions.

The API server's chain is authentication -> authorization -> admission (DESIGN.md). This
module holds the first two as data and pure functions; the API server builds
:class:`Attributes` from a request and calls :func:`authorize`. Sources followed (Kubernetes):

- ``k8s.io/apiserver/pkg/authentication/user`` and ``.../serviceaccount/util.go``: the
  identities and groups (:class:`UserInfo`, :func:`parse_service_account`);
- ``pkg/auth/nodeidentifier/default.go``: who is a node (:func:`node_name_of`);
- ``plugin/pkg/auth/authorizer/rbac/rbac.go``, ``pkg/apis/rbac/v1/evaluation_helpers.go``
  and ``pkg/registry/rbac/validation/rule.go``: RBAC (:func:`rule_allows`,
  :func:`authorize_rbac`);
- ``plugin/pkg/auth/authorizer/node/node_authorizer.go``: the Node authorizer, simplified
  (:func:`authorize_node`);
- ``staging/src/k8s.io/apiserver/pkg/authorization/union/union.go`` and the API server's
  ``--authorization-mode=Node,RBAC`` with the ``system:masters`` privileged group in front:
  the union (:func:`authorize`);
- ``.../endpoints/handlers/responsewriters/errors.go`` and ``apimachinery/pkg/api/errors``
  ``NewForbidden``: the 403 message (:func:`forbidden_message`).

Contract:

- Everything is a pure function of its arguments: no I/O, clocks or randomness. Roles and
  bindings are iterated in the order given; a decision does not depend on that order, only
  the "allowed by" text does (the first granting binding is named, as in Kubernetes).
- A denial's ``reason`` is the whole message of the API server's 403 Forbidden Status, e.g.
  ``pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the
  namespace "default"``, followed by ``: <why>`` when an authorizer said why (a node
  authorizer rule, an RBAC binding whose role does not exist). The API server can return
  it verbatim.
- RBAC is purely additive: adding a role or a binding never removes a permission.

Non-guarantees / simplifications:

- An object with an empty ``metadata.namespace`` (Role, RoleBinding) counts as being in
  "default", as :func:`chaoskube.api.objects.registry_key` stores it.
- ClusterRole aggregation (``aggregationRule``) is not evaluated here: the controller that
  fills an aggregated ClusterRole's rules would, and this module reads ``rules`` only.
- The Node authorizer is the simplification "a kubelet may only touch its own node and
  pods" (see :func:`authorize_node`), not Kubernetes' object graph. Like Kubernetes, it
  cannot see the body of a create: a node may create a Node or a Lease whose name the
  request does not carry, and checking the body's name is NodeRestriction admission's job.
- The union joins the authorizers' reasons with "; " (Kubernetes joins them with a newline):
  every error in this project is one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chaoskube.api.identity import (
    MASTERS_GROUP,
    NODE_LEASE_NAMESPACE,
    UserInfo,
    node_name_of,
    service_account_username,
)
from chaoskube.api.objects import ClusterRole, ClusterRoleBinding, Pod, PolicyRule, Role, RoleBinding, Subject

__all__ = [
    "Attributes",
    "AuthorizationDecision",
    "Decision",
    "VERBS",
    "authorize",
    "authorize_node",
    "authorize_rbac",
    "forbidden_message",
    "rule_allows",
]

#: The verbs of the Kubernetes API (``rbacv1.VerbAll`` "*" is for rules only). Attributes
#: accept any verb, as Kubernetes does ("use", "approve", "sign" exist too).
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind", "escalate", "impersonate")


# =========================================================================== requests


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks (``authorizer.AttributesRecord``), as the API server's
    ``RequestInfo`` resolves it from the URL.

    Resource requests: ``resource`` is the plural ("pods"), ``subresource`` the part after
    the name ("status", "eviction", "binding"), ``name`` empty for list, watch, create and
    deletecollection of a collection (a ``metadata.name`` field selector gives list and watch
    a name). Non-resource requests (``resource_request=False``) carry only ``verb`` and
    ``path`` ("/healthz", "/version"), never a namespace.
    """

    user: UserInfo
    verb: str
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    api_group: str = ""
    resource_request: bool = True
    path: str = ""

    def __post_init__(self) -> None:
        assert self.verb, "a request has a verb"
        assert self.verb != "*", "'*' is a rule wildcard, not a verb a request can carry"
        if self.resource_request:
            assert self.resource, "a resource request names its resource"
            assert "/" not in self.resource, f"put the subresource in `subresource`, not {self.resource!r}"
        else:
            assert self.path.startswith("/"), f"a non-resource request has a path, not {self.path!r}"
            assert not self.namespace, "a non-resource request has no namespace"


@dataclass(frozen=True, slots=True)
class AuthorizationDecision:
    """An authorizer's answer. ``reason``: for a denial, the API server's whole 403 message;
    for an allowance, what allowed it (empty when nothing useful can be said)."""

    allowed: bool
    reason: str


#: The name this module's callers use; the package root exports only
#: ``AuthorizationDecision``, because ``chaoskube.api.Decision`` is leader election's.
Decision = AuthorizationDecision


def forbidden_message(attributes: Attributes, reason: str = "") -> str:
    """The message of the API server's 403 Forbidden Status for ``attributes``.

    ``responsewriters.forbiddenMessage`` wrapped by ``apierrors.NewForbidden``:
    ``<resource>[.<group>] ["<name>" ]is forbidden: User "<user>" cannot <verb> resource
    "<resource>[/<subresource>]" in API group "<group>" (in the namespace "<ns>" | at the
    cluster scope)[: <reason>]``; for a non-resource request
    ``forbidden: User "<user>" cannot <verb> path "<path>"[: <reason>]``.
    """
    user = _quote(attributes.user.name)
    if attributes.resource_request:
        resource = attributes.resource
        if attributes.subresource:
            resource += "/" + attributes.subresource
        text = f"User {user} cannot {attributes.verb} resource {_quote(resource)} in API group {_quote(attributes.api_group)}"
        if attributes.namespace:
            text += f" in the namespace {_quote(attributes.namespace)}"
        else:
            text += " at the cluster scope"
        qualified = attributes.resource + (f".{attributes.api_group}" if attributes.api_group else "")
        prefix = f"{qualified} {_quote(attributes.name)} is forbidden" if attributes.name else f"{qualified} is forbidden"
    else:
        text = f"User {user} cannot {attributes.verb} path {_quote(attributes.path)}"
        prefix = "forbidden"
    if reason:
        text += ": " + reason
    return f"{prefix}: {text}"


def _quote(text: str) -> str:
    """Go's ``%q`` for the strings that occur here (escapes backslash and double quote)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# =========================================================================== RBAC: rules


def rule_allows(attributes: Attributes, rule: PolicyRule) -> bool:
    """Whether one PolicyRule allows the request (``rbac.RuleAllows``).

    Resource requests: verb, API group, resource and resource name must all match. The
    resource matches "*", the exact "resource" or "resource/subresource", or "*/subresource";
    a rule that lists "pods" does *not* cover "pods/status". ``resourceNames``, when given,
    must contain the request's name, so it never matches a request without one (list, watch,
    create, deletecollection of a collection). Non-resource requests: verb and path, where
    "*" matches every path and a trailing "*" matches by prefix ("/healthz*", "/apis/*").
    """
    if not _verb_matches(rule, attributes.verb):
        return False
    if not attributes.resource_request:
        return _non_resource_url_matches(rule, attributes.path)
    combined = attributes.resource + ("/" + attributes.subresource if attributes.subresource else "")
    return (
        _api_group_matches(rule, attributes.api_group)
        and _resource_matches(rule, combined, attributes.subresource)
        and _resource_name_matches(rule, attributes.name)
    )


def _verb_matches(rule: PolicyRule, verb: str) -> bool:
    return "*" in rule.verbs or verb in rule.verbs


def _api_group_matches(rule: PolicyRule, group: str) -> bool:
    return "*" in rule.api_groups or group in rule.api_groups


def _resource_matches(rule: PolicyRule, combined: str, subresource: str) -> bool:
    for resource in rule.resources:
        if resource == "*" or resource == combined:
            return True
        if subresource and resource == "*/" + subresource:
            return True
    return False


def _resource_name_matches(rule: PolicyRule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def _non_resource_url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


# =========================================================================== RBAC: bindings


def _namespace_of(obj: Role | RoleBinding) -> str:
    return obj.metadata.namespace or "default"


def _applies_to(user: UserInfo, subject: Subject, binding_namespace: str) -> bool:
    """``appliesToUser``: a ServiceAccount subject without a namespace takes the binding's,
    so in a ClusterRoleBinding (no namespace) it matches nobody."""
    if subject.kind == "User":
        return user.name == subject.name
    if subject.kind == "Group":
        return subject.name in user.groups
    if subject.kind == "ServiceAccount":
        namespace = subject.namespace or binding_namespace
        return bool(namespace) and user.name == service_account_username(namespace, subject.name)
    return False


def _describe_subject(subject: Subject, binding_namespace: str) -> str:
    if subject.kind == "ServiceAccount":
        return f"{subject.kind} {_quote(subject.name + '/' + (subject.namespace or binding_namespace))}"
    return f"{subject.kind} {_quote(subject.name)}"


def _rbac(
    attributes: Attributes,
    roles: Iterable[Role],
    cluster_roles: Iterable[ClusterRole],
    role_bindings: Iterable[RoleBinding],
    cluster_role_bindings: Iterable[ClusterRoleBinding],
) -> tuple[bool, str]:
    """The RBAC authorizer's (allowed, reason) in Kubernetes' own words: the reason of an
    allowance names the binding; that of a denial lists only resolution errors (missing
    roles), as ``RBACAuthorizer.Authorize`` does."""
    role_index: dict[tuple[str, str], Role] = {}
    for role in roles:
        role_index.setdefault((_namespace_of(role), role.metadata.name), role)
    cluster_role_index: dict[str, ClusterRole] = {}
    for cluster_role in cluster_roles:
        cluster_role_index.setdefault(cluster_role.metadata.name, cluster_role)
    errors: list[str] = []

    def rules_of(binding: RoleBinding | ClusterRoleBinding, namespace: str) -> list[PolicyRule]:
        """``GetRoleReferenceRules``; a failure is recorded in ``errors`` and grants nothing."""
        ref = binding.role_ref
        if ref is None:
            errors.append(f"{binding.KIND.lower()} {_quote(binding.metadata.name)} has no roleRef")
            return []
        if ref.kind == "Role":
            role = role_index.get((namespace, ref.name)) if namespace else None
            if role is None:
                errors.append(f"role.rbac.authorization.k8s.io {_quote(ref.name)} not found")
                return []
            return role.rules
        if ref.kind == "ClusterRole":
            cluster_role = cluster_role_index.get(ref.name)
            if cluster_role is None:
                errors.append(f"clusterrole.rbac.authorization.k8s.io {_quote(ref.name)} not found")
                return []
            return cluster_role.rules
        errors.append(f"unsupported role reference kind: {_quote(ref.kind)}")
        return []

    def first_subject(binding: RoleBinding | ClusterRoleBinding, namespace: str) -> Subject | None:
        return next((subject for subject in binding.subjects if _applies_to(attributes.user, subject, namespace)), None)

    # ClusterRoleBindings grant everywhere, so they are visited for every request.
    for cluster_binding in cluster_role_bindings:
        subject = first_subject(cluster_binding, "")
        if subject is None:
            continue
        if any(rule_allows(attributes, rule) for rule in rules_of(cluster_binding, "")):
            ref = cluster_binding.role_ref
            assert ref is not None
            return True, f"RBAC: allowed by ClusterRoleBinding {_quote(cluster_binding.metadata.name)} of {ref.kind} {_quote(ref.name)} to {_describe_subject(subject, '')}"
    # RoleBindings grant only inside their namespace, and only to namespaced requests.
    namespace = attributes.namespace
    if namespace:
        for binding in role_bindings:
            if _namespace_of(binding) != namespace:
                continue
            subject = first_subject(binding, namespace)
            if subject is None:
                continue
            if any(rule_allows(attributes, rule) for rule in rules_of(binding, namespace)):
                ref = binding.role_ref
                assert ref is not None
                return True, f"RBAC: allowed by RoleBinding {_quote(binding.metadata.name + '/' + namespace)} of {ref.kind} {_quote(ref.name)} to {_describe_subject(subject, namespace)}"
    return False, ("RBAC: " + _aggregate(errors)) if errors else ""


def _aggregate(errors: list[str]) -> str:
    """``utilerrors.Aggregate.Error()``: duplicates dropped, one message bare, more bracketed."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def authorize_rbac(
    attributes: Attributes,
    roles: Iterable[Role] = (),
    cluster_roles: Iterable[ClusterRole] = (),
    role_bindings: Iterable[RoleBinding] = (),
    cluster_role_bindings: Iterable[ClusterRoleBinding] = (),
) -> AuthorizationDecision:
    """The RBAC authorizer, with the API server's ``system:masters`` superuser in front.

    ClusterRoleBindings grant their (Cluster)Role's rules for every request; a RoleBinding
    grants its Role's (in its own namespace) or a ClusterRole's rules only for requests in
    the RoleBinding's namespace. Subjects: User (by name), Group (by membership),
    ServiceAccount (namespace defaults to the RoleBinding's). A binding whose role is missing
    grants nothing and its error is appended to a denial (``RBAC: clusterrole... not found``).
    """
    if MASTERS_GROUP in attributes.user.groups:
        return AuthorizationDecision(True, f"allowed: user is in group {_quote(MASTERS_GROUP)}")
    allowed, reason = _rbac(attributes, roles, cluster_roles, role_bindings, cluster_role_bindings)
    return AuthorizationDecision(True, reason) if allowed else AuthorizationDecision(False, forbidden_message(attributes, reason))


# =========================================================================== Node authorizer

#: What every node may read (get, list, watch), by (API group, resource).
_NODE_READABLE = frozenset({("", "nodes"), ("", "pods"), ("", "services"), ("", "endpoints"), ("discovery.k8s.io", "endpointslices")})
_READ_VERBS = frozenset({"get", "list", "watch"})
_LEASE_VERBS = ("get", "create", "update", "patch", "delete")


#: What a node may get when a pod bound to it references the object (the graph of
#: ``node_authorizer.go``: pod -> configmap, secret, persistentvolumeclaim -> persistentvolume).
_NODE_REFERENCED = frozenset({("", "configmaps"), ("", "secrets"), ("", "persistentvolumeclaims"), ("", "persistentvolumes")})


def _node(attributes: Attributes, pod: Pod | None, references: frozenset[tuple[str, str, str]] = frozenset()) -> tuple[bool, str]:
    """The Node authorizer's (allowed, reason): reason empty for non-nodes (no opinion)."""
    node_name = node_name_of(attributes.user)
    if node_name is None:
        return False, ""
    if not node_name:
        return False, f"unknown node for user {_quote(attributes.user.name)}"
    if not attributes.resource_request:
        return False, f"node '{node_name}' may only make resource requests"
    verb, group, resource, subresource = attributes.verb, attributes.api_group, attributes.resource, attributes.subresource
    if (group, resource) in _NODE_READABLE and verb in _READ_VERBS and not subresource:
        return True, ""
    if (group, resource) == ("", "nodes"):
        return _node_object(node_name, attributes)
    if (group, resource) == ("", "pods"):
        return _node_pod(node_name, attributes, pod)
    if (group, resource) == ("coordination.k8s.io", "leases"):
        return _node_lease(node_name, attributes)
    if (group, resource) in _NODE_REFERENCED:
        if verb == "get" and not subresource and (resource, attributes.namespace, attributes.name) in references:
            return True, ""
        return False, f"no relationship found between node '{node_name}' and this object"
    return False, f"node '{node_name}' may only touch its own node and the pods bound to it"


def _node_object(node_name: str, attributes: Attributes) -> tuple[bool, str]:
    """A node may create, update and patch its own Node and update and patch its status."""
    if attributes.subresource == "":
        verbs: tuple[str, ...] = ("create", "update", "patch")
    elif attributes.subresource == "status":
        verbs = ("update", "patch")
    else:
        verbs = ()
    if attributes.verb not in verbs:
        return False, f"node '{node_name}' can only create, update or patch its own Node and update or patch its status"
    # A create names no object (the name is in the body): Kubernetes allows it and leaves
    # the name to NodeRestriction admission. A request that does name one must be our own.
    if attributes.name and attributes.name != node_name:
        return False, f"node {_quote(node_name)} is not allowed to modify node {_quote(attributes.name)}"
    if not attributes.name and attributes.verb != "create":
        return False, "No Object name found"
    return True, ""


def _node_pod(node_name: str, attributes: Attributes, pod: Pod | None) -> tuple[bool, str]:
    """A node may update and patch the status of, evict and delete the pods bound to it."""
    if attributes.subresource == "status":
        verbs: tuple[str, ...] = ("update", "patch")
    elif attributes.subresource == "eviction":
        verbs = ("create",)
    elif attributes.subresource == "":
        verbs = ("delete",)
    else:
        verbs = ()
    if attributes.verb not in verbs:
        return False, f"node '{node_name}' can only update or patch the status of, evict or delete pods bound to it"
    if not attributes.name:
        return False, "No Object name found"
    # The pod must be the one the request names, and bound to this node; without it we
    # cannot tell, and fail safe.
    if (
        pod is None
        or pod.metadata.name != attributes.name
        or (pod.metadata.namespace or "default") != (attributes.namespace or "default")
        or pod.spec.node_name != node_name
    ):
        return False, f"no relationship found between node '{node_name}' and this object"
    return True, ""


def _node_lease(node_name: str, attributes: Attributes) -> tuple[bool, str]:
    """``authorizeLease``: a node's own Lease in kube-node-lease."""
    if attributes.verb not in _LEASE_VERBS or attributes.subresource:
        return False, "can only get, create, update, patch, or delete a node lease"
    if attributes.namespace != NODE_LEASE_NAMESPACE:
        return False, f"can only access leases in the {_quote(NODE_LEASE_NAMESPACE)} system namespace"
    # As Kubernetes: a create may carry no name (NodeRestriction admission checks the body).
    if not (attributes.verb == "create" and not attributes.name) and attributes.name != node_name:
        return False, "can only access node lease with the same name as the requesting node"
    return True, ""


def authorize_node(attributes: Attributes, pod: Pod | None = None, references: frozenset[tuple[str, str, str]] = frozenset()) -> AuthorizationDecision:
    """The Node authorizer, simplified: a kubelet may only touch its own node and pods.

    For a user that :func:`node_name_of` identifies as node N (anyone else is denied, with
    no node-specific reason):

    - get, list, watch of nodes, pods, services, endpoints and endpointslices (not their
      subresources) are allowed. (Kubernetes 1.32's ``AuthorizeNodeWithSelectors`` narrows
      node and pod reads to N's own; we keep the older, broader rule.)
    - create, update, patch of Node N; update, patch of ``nodes/status`` of N.
    - update, patch of ``pods/status``, create of ``pods/eviction`` and delete of a pod only
      when ``pod`` (the stored object the request names) is bound to N (``spec.nodeName ==
      N``); without ``pod`` the answer is no. Creating (mirror) pods is not allowed.
    - get, create, update, patch, delete of the Lease N in ``kube-node-lease`` (Kubernetes'
      ``authorizeLease``; the kubelet reads its lease before renewing it).
    - get of a ConfigMap, Secret, PersistentVolumeClaim or PersistentVolume that a pod bound
      to N references (``references``: (resource, namespace, name) triples the caller
      computed from its cache; a PV by the claims of those pods).
    - everything else is denied. What Kubernetes grants nodes beyond this (events, the
      ``system:node`` ClusterRole) is left to RBAC.
    """
    allowed, reason = _node(attributes, pod, references)
    return AuthorizationDecision(True, reason) if allowed else AuthorizationDecision(False, forbidden_message(attributes, reason))


# =========================================================================== the union


def authorize(
    attributes: Attributes,
    roles: Iterable[Role] = (),
    cluster_roles: Iterable[ClusterRole] = (),
    role_bindings: Iterable[RoleBinding] = (),
    cluster_role_bindings: Iterable[ClusterRoleBinding] = (),
    pod: Pod | None = None,
    references: frozenset[tuple[str, str, str]] = frozenset(),
) -> AuthorizationDecision:
    """The API server's authorization: ``system:masters``, then Node, then RBAC
    (``--authorization-mode=Node,RBAC``). The first that allows decides; if none does, the
    request is denied with the 403 message and the authorizers' reasons (union.go).

    ``pod``: for a request about one existing pod, that pod as stored (the Node authorizer
    needs its ``spec.nodeName``); None otherwise.
    """
    if MASTERS_GROUP in attributes.user.groups:
        return AuthorizationDecision(True, f"allowed: user is in group {_quote(MASTERS_GROUP)}")
    reasons = []
    for authorizer in (
        lambda: _node(attributes, pod, references),
        lambda: _rbac(attributes, roles, cluster_roles, role_bindings, cluster_role_bindings),
    ):
        allowed, reason = authorizer()
        if allowed:
            return AuthorizationDecision(True, reason)
        if reason:
            reasons.append(reason)
    return AuthorizationDecision(False, forbidden_message(attributes, "; ".join(reasons)))

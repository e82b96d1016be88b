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
- ``plugin/pkg/auth/authorizer/node/node_authorizer.go`` and ``bootstrappolicy.NodeRules()``:
  the Node authorizer (:func:`authorize_node`);
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
- The Node authorizer follows upstream's static node rules (see :func:`authorize_node`):
  it lets a kubelet write any pod's status and any Node, and leaves limiting it to its
  own to the NodeRestriction admission plugin, as Kubernetes does; the object graph that
  upstream checks for secrets, config maps and volumes is not modelled (those kinds are
  not served).
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
    "rules_for",
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
        # "*" is a rule wildcard; a request carries it only when an access review asks
        # "may I do everything?" (``kubectl auth can-i '*' '*'``): only "*" rules match it.
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

#: ``bootstrappolicy.NodeRules()`` (``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go``)
#: reduced to the resources the simulated API serves, plus what kube-proxy reads (it runs
#: with its node's credentials here; upstream it has the ``system:node-proxier`` role):
#: (verbs, API group, resources). Writes to pods and nodes are allowed for *any* pod or
#: node, as upstream: the NodeRestriction admission plugin is what limits a kubelet to its
#: own Node and the pods bound to it (``node_authorizer_test.go``: "update unrelated pod
#: status ... guarded by NodeRestriction admission").
_NODE_RULES: tuple[tuple[frozenset[str], str, frozenset[str]], ...] = (
    (frozenset({"get", "list", "watch"}), "", frozenset({"services", "pods"})),
    (frozenset({"create", "get", "list", "watch", "update", "patch"}), "", frozenset({"nodes"})),
    (frozenset({"update", "patch"}), "", frozenset({"nodes/status", "pods/status"})),
    (frozenset({"create", "update", "patch"}), "", frozenset({"events"})),
    (frozenset({"create", "update", "patch"}), "events.k8s.io", frozenset({"events"})),
    (frozenset({"create", "delete"}), "", frozenset({"pods"})),
    (frozenset({"create"}), "", frozenset({"pods/eviction"})),
    (frozenset({"get"}), "", frozenset({"endpoints"})),
    # kube-proxy's reads (system:node-proxier): endpoints and EndpointSlices
    (frozenset({"list", "watch"}), "", frozenset({"endpoints"})),
    (frozenset({"get", "list", "watch"}), "discovery.k8s.io", frozenset({"endpointslices"})),
)
_LEASE_VERBS = ("get", "create", "update", "patch", "delete")


#: What a node may get when a pod bound to it references the object (the graph of
#: ``node_authorizer.go``: pod -> configmap, secret, persistentvolumeclaim -> persistentvolume).
_NODE_REFERENCED = frozenset({("", "configmaps"), ("", "secrets"), ("", "persistentvolumeclaims"), ("", "persistentvolumes")})


def _node(attributes: Attributes, pod: Pod | None, references: frozenset[tuple[str, str, str]] = frozenset()) -> tuple[bool, str]:
    """The Node authorizer's (allowed, reason): reason empty for non-nodes (no opinion).

    ``NodeAuthorizer.Authorize`` (``node_authorizer.go``) with ``AuthorizeNodeWithSelectors``
    off: leases by name, the graph-checked kinds (config maps, secrets, claims, volumes) by
    ``references`` (what the pods bound to the node reference), and everything else by the
    static node rules."""
    del pod  # pods and nodes go by the static rules (NodeRestriction admission narrows writes)
    node_name = node_name_of(attributes.user)
    if node_name is None:
        return False, ""
    if not node_name:
        return False, f"unknown node for user {_quote(attributes.user.name)}"
    if not attributes.resource_request:
        return False, f"node '{node_name}' may only make resource requests"
    if (attributes.api_group, attributes.resource) == ("coordination.k8s.io", "leases"):
        return _node_lease(node_name, attributes)
    if (attributes.api_group, attributes.resource) in _NODE_REFERENCED:
        if attributes.verb == "get" and not attributes.subresource and (attributes.resource, attributes.namespace, attributes.name) in references:
            return True, ""
        return False, f"no relationship found between node '{node_name}' and this object"
    combined = attributes.resource + ("/" + attributes.subresource if attributes.subresource else "")
    for verbs, group, resources in _NODE_RULES:
        if attributes.verb in verbs and attributes.api_group == group and combined in resources:
            return True, ""
    return False, f"node '{node_name}' may not {attributes.verb} {combined}"


def _node_lease(node_name: str, attributes: Attributes) -> tuple[bool, str]:
    """``authorizeLease``: a node's own Lease in kube-node-lease. A create is not checked
    by name (the authorizer does not see the body): NodeRestriction admission checks it."""
    if attributes.verb not in _LEASE_VERBS or attributes.subresource:
        return False, "can only get, create, update, patch, or delete a node lease"
    if attributes.namespace != NODE_LEASE_NAMESPACE:
        return False, f"can only access leases in the {_quote(NODE_LEASE_NAMESPACE)} system namespace"
    if attributes.verb != "create" and attributes.name != node_name:
        return False, "can only access node lease with the same name as the requesting node"
    return True, ""


def authorize_node(attributes: Attributes, pod: Pod | None = None, references: frozenset[tuple[str, str, str]] = frozenset()) -> AuthorizationDecision:
    """The Node authorizer, as ``node_authorizer.go`` with ``AuthorizeNodeWithSelectors`` off.

    For a user that :func:`node_name_of` identifies as node N (anyone else is denied, with
    no node-specific reason):

    - the static node rules (:data:`_NODE_RULES`): read services, pods, nodes, endpoints
      and EndpointSlices; create, update, patch any Node and its status; create and delete
      any pod, update and patch any pod's status, evict any pod; events. Which Node and
      which pods a kubelet may *write* is the NodeRestriction admission plugin's job, as
      upstream (:class:`chaoskube.apiserver.admission.NodeRestrictionPlugin`);
    - get, create, update, patch, delete of the Lease N in ``kube-node-lease``
      (``authorizeLease``; a create is not checked by name);
    - get of a ConfigMap, Secret, PersistentVolumeClaim or PersistentVolume that a pod bound
      to N references (``references``: (resource, namespace, name) triples the caller
      computed from its cache; a PV by the claims of those pods), as upstream's graph;
    - everything else is denied.

    ``pod`` is accepted for the callers' convenience and not needed."""
    allowed, reason = _node(attributes, pod, references)
    return AuthorizationDecision(True, reason) if allowed else AuthorizationDecision(False, forbidden_message(attributes, reason))


# =========================================================================== the union


def rules_for(
    user: UserInfo,
    namespace: str,
    roles: Iterable[Role] = (),
    cluster_roles: Iterable[ClusterRole] = (),
    role_bindings: Iterable[RoleBinding] = (),
    cluster_role_bindings: Iterable[ClusterRoleBinding] = (),
) -> tuple[list[PolicyRule], list[PolicyRule], bool, str]:
    """What ``user`` may do in ``namespace``, as ``RulesFor`` of the union of authorizers
    answers a SelfSubjectRulesReview: (resource rules, non-resource rules, incomplete,
    evaluation error). ``system:masters``: everything; a node: incomplete ("node authorizer
    does not support user rule resolution"); RBAC: the rules of every ClusterRoleBinding
    and of the namespace's RoleBindings that name the user (``RBACAuthorizer.RulesFor``),
    a missing role listed in the error."""
    resource_rules: list[PolicyRule] = []
    non_resource_rules: list[PolicyRule] = []
    errors: list[str] = []
    incomplete = False
    if MASTERS_GROUP in user.groups:
        resource_rules.append(PolicyRule(verbs=["*"], api_groups=["*"], resources=["*"]))
        non_resource_rules.append(PolicyRule(verbs=["*"], non_resource_urls=["*"]))
    if node_name_of(user):
        incomplete = True
        errors.append("node authorizer does not support user rule resolution")
    role_index = {(_namespace_of(role), role.metadata.name): role for role in roles}
    cluster_role_index = {role.metadata.name: role for role in cluster_roles}

    def add(binding: RoleBinding | ClusterRoleBinding, binding_namespace: str) -> None:
        if not any(_applies_to(user, subject, binding_namespace) for subject in binding.subjects):
            return
        ref = binding.role_ref
        rules: list[PolicyRule] = []
        if ref is not None and ref.kind == "ClusterRole":
            found = cluster_role_index.get(ref.name)
            if found is None:
                errors.append(f"clusterrole.rbac.authorization.k8s.io {_quote(ref.name)} not found")
            else:
                rules = found.rules
        elif ref is not None and ref.kind == "Role" and binding_namespace:
            role = role_index.get((binding_namespace, ref.name))
            if role is None:
                errors.append(f"role.rbac.authorization.k8s.io {_quote(ref.name)} not found")
            else:
                rules = role.rules
        for rule in rules:
            (non_resource_rules if rule.non_resource_urls else resource_rules).append(rule)

    for cluster_binding in sorted(cluster_role_bindings, key=lambda binding: binding.metadata.name):
        add(cluster_binding, "")
    if namespace:
        for binding in sorted(role_bindings, key=lambda binding: binding.metadata.name):
            if _namespace_of(binding) == namespace:
                add(binding, namespace)
    if errors and not incomplete:
        incomplete = True
    return resource_rules, non_resource_rules, incomplete, _aggregate(errors) if errors else ""


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

"""What a request should get from the API server's security boundaries: an oracle written
from the Kubernetes documentation, independent of :mod:`chaoskube.apiserver`.

The ``authorization`` checker (:mod:`chaoskube.checkers.authorization`) asks it, for each
attempt an adversarial tenant journaled, what the cluster's policy objects (as the store
held them) allowed; this module never looks at what the server answered. It is a pure,
declarative evaluator over the objects' JSON as the API server stores them (camelCase):

1. **Authentication** (https://kubernetes.io/docs/reference/access-authn-authz/authentication/):
   a client certificate is the user CN in the groups O; a service account token is
   ``system:serviceaccount:<ns>:<name>`` in ``system:serviceaccounts`` and
   ``system:serviceaccounts:<ns>``, valid only while that ServiceAccount exists, and a
   *bound* token only while the account with the uid it names exists (bound tokens,
   https://kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/#bound-service-account-token-volume);
   every authenticated user is in ``system:authenticated``.
2. **Authorization** as ``--authorization-mode=Node,RBAC`` with ``system:masters`` in
   front: the first that allows decides.

   - *RBAC* (https://kubernetes.io/docs/reference/access-authn-authz/rbac/): a
     ClusterRoleBinding grants its ClusterRole's rules everywhere; a RoleBinding grants its
     Role's (in its own namespace) or a ClusterRole's rules *only in its namespace*, and
     never for a cluster-scoped request. Subjects: User by name, Group by membership,
     ServiceAccount by namespace (the binding's when unset) and name. A rule matches the
     verb (or ``*``), the API group (or ``*``), the resource (``*``, ``resource``,
     ``resource/subresource`` or ``*/subresource``), the ``resourceNames`` when listed, or
     a non-resource path (``*``, exact, or a ``prefix*``). Permissions are purely additive.
   - *Node* (https://kubernetes.io/docs/reference/access-authn-authz/node/): a user
     ``system:node:<n>`` in ``system:nodes`` gets the static node rules (``NodeRules``:
     read services, endpoints, nodes, pods; write nodes, node status, pods, pod status,
     evictions, events, leases, ...), and reads secrets, config maps, persistent volume
     claims and volumes, resource claims, volume attachments and service account tokens
     only through the object graph: objects referenced by pods bound to node ``n`` (or by
     a persistent volume bound to such a claim). Leases, CSINodes and ResourceSlices go
     by the node's name. With ``AuthorizeNodeWithSelectors`` (``selector_authz``) a node
     reads only its own Node and the pods bound to it.
3. **Admission** (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/):
   only the two boundaries the tenants exercise:

   - *NodeRestriction*: a kubelet may only modify its own Node (no taint changes, no
     ``node-restriction.kubernetes.io/`` labels or ``kubernetes.io``/``k8s.io`` labels
     outside the kubelet's set, no owner references: CVE-2025-5187) and the pods bound to
     it (status without label changes: KEP-1314; delete; evict), may only create mirror
     pods bound to itself, and only its own Lease in ``kube-node-lease``;
   - *NamespaceLifecycle*: nothing is created or updated in a namespace that does not
     exist, nothing created in one that is Terminating.

Contract: pure functions of their arguments; objects are read, never changed. The answer
is an :class:`Expectation`: ``allowed`` and, when denied, the stage and the rule that
denies (for a finding's text). Non-guarantees: other admission plugins (webhooks, the
ServiceAccount and Priority plugins, validation) are not judged -- the checker judges only
what these boundaries decide; ClusterRole aggregation is read as stored (the rules the
aggregation controller wrote); impersonation, anonymous requests and ABAC are not modelled.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AUTHENTICATED",
    "Expectation",
    "Identity",
    "NODE_RULES",
    "Request",
    "State",
    "applies_to",
    "authenticate",
    "expect",
    "merge_patch",
    "node_authorizer",
    "node_restriction",
    "namespace_lifecycle",
    "non_resource_url_matches",
    "rbac",
    "resource_matches",
    "rule_allows",
    "rules_for",
]

Obj = dict[str, Any]

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
NODES = "system:nodes"
NODE_PREFIX = "system:node:"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
NODE_LEASE_NAMESPACE = "kube-node-lease"
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


# =========================================================================== requests
@dataclass(frozen=True, slots=True)
class Identity:
    """Who made a request (``user.Info``)."""

    user: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Request:
    """What a request asked (``authorizer.Attributes`` plus the body admission sees).

    ``name`` is empty for list, watch and create of a collection (the authorizer does not
    see a create's name); ``field_selector`` is the raw selector (``spec.nodeName=n1``);
    ``body`` the object sent (create, update) or the merge patch (``patch``)."""

    verb: str
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    api_group: str = ""
    resource_request: bool = True
    path: str = ""
    field_selector: str = ""
    body: Obj | None = None

    @property
    def combined(self) -> str:
        return self.resource + ("/" + self.subresource if self.subresource else "")


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the boundaries decide: allowed, or denied at ``stage`` (authentication,
    authorization, admission) because of ``why``."""

    allowed: bool
    stage: str = ""
    why: str = ""


class State:
    """The stored objects the oracle reads, by resource then key (``ns/name``, or ``name``
    for cluster-scoped kinds), as :class:`chaoskube.checkers.replay.StoreReplay` keeps them.
    ``lookup(resource, key)`` and ``items(resource)`` must be consistent; a resource
    absent is empty."""

    def __init__(self, tables: Mapping[str, Mapping[str, Obj]] | None = None) -> None:
        self.tables = tables or {}

    def get(self, resource: str, key: str) -> Obj | None:
        return self.tables.get(resource, {}).get(key)

    def items(self, resource: str) -> Iterable[tuple[str, Obj]]:
        return sorted(self.tables.get(resource, {}).items())


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _ns_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


# =========================================================================== authentication
def authenticate(credentials: Mapping[str, Any], state: State) -> tuple[Identity | None, str]:
    """The identity ``credentials`` authenticate as, or (None, why) when they do not.

    ``credentials``: ``{"kind": "certificate", "common_name", "organizations"}``,
    ``{"kind": "service-account-token", "namespace", "name", "uid"}`` (``uid`` "" for a
    legacy token) or ``{"kind": "token", "user", "groups"}`` (a static token file entry)."""
    kind = credentials.get("kind")
    if kind == "certificate":
        name = credentials.get("common_name") or ""
        if not name:
            return None, "a client certificate without a common name"
        groups = tuple(credentials.get("organizations") or ())
        return Identity(name, _with_authenticated(groups)), ""
    if kind == "service-account-token":
        namespace, name, uid = credentials.get("namespace", ""), credentials.get("name", ""), credentials.get("uid", "")
        account = state.get("serviceaccounts", _ns_key(namespace, name))
        if account is None:
            return None, f"service account {namespace}/{name} does not exist: its tokens are invalid"
        if uid and _meta(account).get("uid") != uid:
            return None, f"the token is bound to service account {namespace}/{name} with uid {uid}, which no longer exists (the account of that name now has uid {_meta(account).get('uid')})"
        groups = (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED)
        return Identity(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}", groups), ""
    if kind == "token":
        return Identity(credentials.get("user", ""), _with_authenticated(tuple(credentials.get("groups") or ()))), ""
    return None, f"unknown credentials {kind!r}"


def _with_authenticated(groups: tuple[str, ...]) -> tuple[str, ...]:
    return groups if AUTHENTICATED in groups else (*groups, AUTHENTICATED)


# =========================================================================== RBAC
def resource_matches(rule_resources: Iterable[str], combined: str, subresource: str) -> bool:
    """``ResourceMatches``: ``*``, the exact ``resource[/subresource]``, or ``*/<sub>``
    for a request with that subresource (the whole subresource, slashes included)."""
    for resource in rule_resources:
        if resource == "*" or resource == combined:
            return True
        if subresource and resource == "*/" + subresource:
            return True
    return False


def non_resource_url_matches(rule_urls: Iterable[str], path: str) -> bool:
    """``*``, the exact path, or a rule ending in ``*`` as a prefix (``/apis/*`` does not
    match ``/apis``)."""
    for url in rule_urls:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(request: Request, rule: Obj) -> bool:
    """``RuleAllows`` for one PolicyRule (JSON: verbs, apiGroups, resources, resourceNames,
    nonResourceURLs). Matching is exact and case-sensitive."""
    verbs = rule.get("verbs") or ()
    if "*" not in verbs and request.verb not in verbs:
        return False
    if not request.resource_request:
        return non_resource_url_matches(rule.get("nonResourceURLs") or (), request.path)
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and request.api_group not in groups:
        return False
    if not resource_matches(rule.get("resources") or (), request.combined, request.subresource):
        return False
    names = rule.get("resourceNames") or ()
    return not names or request.name in names


def applies_to(identity: Identity, subject: Obj, binding_namespace: str) -> bool:
    """Whether a binding's subject is this identity (``appliesToUser``). A ServiceAccount
    subject without a namespace takes the binding's, so in a ClusterRoleBinding it matches
    nobody; ``*`` is no wildcard."""
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return identity.user == name
    if kind == "Group":
        return name in identity.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and identity.user == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def _role_rules(state: State, ref: Obj, namespace: str) -> list[Obj]:
    kind, name = ref.get("kind"), ref.get("name", "")
    if kind == "ClusterRole":
        role = state.get("clusterroles", name)
    elif kind == "Role" and namespace:
        role = state.get("roles", _ns_key(namespace, name))
    else:
        role = None
    return list((role or {}).get("rules") or ())


def _bindings(state: State, identity: Identity, namespace: str) -> Iterable[tuple[str, str, Obj]]:
    """(kind, "name" or "ns/name", rule) for every rule granted to ``identity`` for a request
    in ``namespace`` ("" = cluster scope): ClusterRoleBindings first, then that namespace's
    RoleBindings."""
    for key, binding in state.items("clusterrolebindings"):
        if any(applies_to(identity, subject, "") for subject in binding.get("subjects") or ()):
            for rule in _role_rules(state, binding.get("roleRef") or {}, ""):
                yield "ClusterRoleBinding", key, rule
    if not namespace:
        return
    for key, binding in state.items("rolebindings"):
        binding_namespace = _meta(binding).get("namespace") or key.partition("/")[0]
        if binding_namespace != namespace:
            continue
        if any(applies_to(identity, subject, namespace) for subject in binding.get("subjects") or ()):
            for rule in _role_rules(state, binding.get("roleRef") or {}, namespace):
                yield "RoleBinding", key, rule


def rules_for(identity: Identity, namespace: str, state: State) -> list[Obj]:
    """Every rule that applies to ``identity`` in ``namespace`` (``RulesFor``)."""
    return [rule for _, _, rule in _bindings(state, identity, namespace)]


def rbac(request: Request, identity: Identity, state: State) -> tuple[bool, str]:
    """(allowed, what allowed it / why not) by the RBAC documentation's rules."""
    for kind, key, rule in _bindings(state, identity, request.namespace):
        if rule_allows(request, rule):
            return True, f"{kind} {key}"
    where = f"in namespace {request.namespace}" if request.namespace else "at the cluster scope"
    return False, f"RBAC: no binding grants {request.verb} {request.combined or request.path} {where} to {identity.user}"


# =========================================================================== the Node authorizer
def _rule(verbs: str, group: str, resources: str) -> Obj:
    return {"verbs": verbs.split(","), "apiGroups": [group], "resources": resources.split(",")}


#: ``bootstrappolicy.NodeRules()`` as the Node authorization page describes it (current
#: Kubernetes, every feature on).
NODE_RULES: tuple[Obj, ...] = (
    _rule("create", "authentication.k8s.io", "tokenreviews"),
    _rule("create", "authorization.k8s.io", "subjectaccessreviews,localsubjectaccessreviews"),
    _rule("get,list,watch", "", "services"),
    _rule("create,get,list,watch", "", "nodes"),
    _rule("update,patch", "", "nodes/status"),
    _rule("update,patch", "", "nodes"),
    _rule("create,update,patch", "", "events"),
    _rule("create,update,patch", "events.k8s.io", "events"),
    _rule("get,list,watch", "", "pods"),
    _rule("create,delete", "", "pods"),
    _rule("update,patch", "", "pods/status"),
    _rule("create", "", "pods/eviction"),
    _rule("get,list,watch", "", "secrets,configmaps"),
    _rule("get", "", "persistentvolumeclaims,persistentvolumes"),
    _rule("get", "", "endpoints"),
    _rule("create,get,list,watch", "certificates.k8s.io", "certificatesigningrequests"),
    _rule("get,create,update,patch,delete", "coordination.k8s.io", "leases"),
    _rule("get", "storage.k8s.io", "volumeattachments"),
    _rule("get,update,patch", "", "persistentvolumeclaims/status"),
    _rule("create", "", "serviceaccounts/token"),
    _rule("get,watch,list", "storage.k8s.io", "csidrivers"),
    _rule("get,create,update,patch,delete", "storage.k8s.io", "csinodes"),
    _rule("get,list,watch", "node.k8s.io", "runtimeclasses"),
    _rule("get", "resource.k8s.io", "resourceclaims"),
    _rule("get,list,watch,create,update,patch,delete", "resource.k8s.io", "resourceslices"),
)

#: Kinds a node reaches only through the graph: (group, resource) -> vertex type.
_GRAPH_KINDS = {
    ("", "secrets"): "secret", ("", "configmaps"): "configmap", ("", "persistentvolumeclaims"): "pvc",
    ("", "persistentvolumes"): "pv", ("resource.k8s.io", "resourceclaims"): "resourceclaim",
    ("storage.k8s.io", "volumeattachments"): "volumeattachment",
}
#: kube-proxy reads with its node's credentials in this simulation (upstream: the
#: ``system:node-proxier`` ClusterRole); allowed on top of the node rules.
PROXIER_RULES: tuple[Obj, ...] = (
    _rule("list,watch", "", "endpoints"),
    _rule("get,list,watch", "discovery.k8s.io", "endpointslices"),
)


def node_name_of(identity: Identity) -> str | None:
    """``NodeIdentity``: the node a user is (``system:node:`` prefix *and* ``system:nodes``)."""
    if not identity.user.startswith(NODE_PREFIX) or NODES not in identity.groups:
        return None
    return identity.user[len(NODE_PREFIX):]


def _pod_references(pod: Obj) -> set[tuple[str, str]]:
    """(vertex type, name) of what a pod uses: ``podutil.VisitPodSecretNames``,
    ``VisitPodConfigmapNames``, its claims, its service account, its resource claims."""
    spec = pod.get("spec") or {}
    found: set[tuple[str, str]] = set()
    for ref in spec.get("imagePullSecrets") or ():
        found.add(("secret", ref.get("name", "")))
    containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ()), *(spec.get("ephemeralContainers") or ())]
    for container in containers:
        for env in container.get("env") or ():
            source = env.get("valueFrom") or {}
            if source.get("secretKeyRef"):
                found.add(("secret", source["secretKeyRef"].get("name", "")))
            if source.get("configMapKeyRef"):
                found.add(("configmap", source["configMapKeyRef"].get("name", "")))
        for env_from in container.get("envFrom") or ():
            if env_from.get("secretRef"):
                found.add(("secret", env_from["secretRef"].get("name", "")))
            if env_from.get("configMapRef"):
                found.add(("configmap", env_from["configMapRef"].get("name", "")))
    for volume in spec.get("volumes") or ():
        if volume.get("secret"):
            found.add(("secret", volume["secret"].get("secretName", "")))
        if volume.get("configMap"):
            found.add(("configmap", volume["configMap"].get("name", "")))
        for source in (volume.get("projected") or {}).get("sources") or ():
            if source.get("secret"):
                found.add(("secret", source["secret"].get("name", "")))
            if source.get("configMap"):
                found.add(("configmap", source["configMap"].get("name", "")))
        for plugin in ("azureFile", "cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos", "csi"):
            source = volume.get(plugin) or {}
            for key in ("secretRef", "nodePublishSecretRef"):
                if source.get(key):
                    found.add(("secret", source[key].get("name", "")))
            if plugin == "azureFile" and source.get("secretName"):
                found.add(("secret", source["secretName"]))
        if volume.get("persistentVolumeClaim"):
            found.add(("pvc", volume["persistentVolumeClaim"].get("claimName", "")))
        if volume.get("ephemeral"):
            found.add(("pvc", f"{_meta(pod).get('name', '')}-{volume.get('name', '')}"))
    for claim in spec.get("resourceClaims") or ():
        if claim.get("resourceClaimName"):
            found.add(("resourceclaim", claim["resourceClaimName"]))
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if status.get("resourceClaimName"):
            found.add(("resourceclaim", status["resourceClaimName"]))
    if spec.get("serviceAccountName"):
        found.add(("serviceaccount", spec["serviceAccountName"]))
    found.discard(("secret", ""))
    found.discard(("configmap", ""))
    return found


def _pv_secrets(pv: Obj) -> set[tuple[str, str]]:
    """(namespace, secret) a persistent volume references (``VisitPVSecretNames``: a
    secret ref without a namespace takes the claim's)."""
    spec = pv.get("spec") or {}
    claim_namespace = (spec.get("claimRef") or {}).get("namespace", "")
    found = set()
    for source in spec.values():
        if not isinstance(source, dict):
            continue
        for key in ("secretRef", "nodePublishSecretRef", "nodeStageSecretRef", "nodeExpandSecretRef", "controllerPublishSecretRef"):
            ref = source.get(key)
            if isinstance(ref, dict) and ref.get("name"):
                found.add((ref.get("namespace") or claim_namespace, ref["name"]))
    return found


def _related(state: State, node: str, vertex: str, namespace: str, name: str) -> bool:
    """Whether the object is reachable from ``node`` in the Node authorizer's graph."""
    if vertex == "volumeattachment":
        attachment = state.get("volumeattachments", name)
        return attachment is not None and (attachment.get("spec") or {}).get("nodeName") == node
    if vertex == "resourceslice":
        slice_ = state.get("resourceslices", name)
        return slice_ is not None and (slice_.get("spec") or {}).get("nodeName", slice_.get("nodeName")) == node
    if vertex == "pod":
        pod = state.get("pods", _ns_key(namespace, name))
        return pod is not None and (pod.get("spec") or {}).get("nodeName") == node
    pods = [pod for key, pod in state.items("pods") if (pod.get("spec") or {}).get("nodeName") == node and key.partition("/")[0] == namespace]
    if vertex == "pv":
        pv = state.get("persistentvolumes", name)
        if pv is None:
            return False
        claim = (pv.get("spec") or {}).get("claimRef") or {}
        pods = [pod for key, pod in state.items("pods") if (pod.get("spec") or {}).get("nodeName") == node and key.partition("/")[0] == claim.get("namespace")]
        return any(("pvc", claim.get("name", "")) in _pod_references(pod) for pod in pods)
    if any((vertex, name) in _pod_references(pod) for pod in pods):
        return True
    if vertex == "secret":  # through a persistent volume bound to a claim of such a pod
        for _, pv in state.items("persistentvolumes"):
            if (namespace, name) not in _pv_secrets(pv):
                continue
            claim = (pv.get("spec") or {}).get("claimRef") or {}
            if claim.get("namespace") == namespace and any(("pvc", claim.get("name", "")) in _pod_references(pod) for pod in pods):
                return True
    return False


def _field_equals(selector: str, field_name: str, value: str) -> bool:
    """Whether a field selector has the requirement ``field_name=value`` (or ``==``)."""
    for requirement in (part.strip() for part in selector.split(",") if part.strip()):
        for operator in ("==", "="):
            if operator in requirement and "!=" not in requirement:
                key, _, wanted = requirement.partition(operator)
                if key.strip() == field_name and wanted.strip() == value:
                    return True
                break
    return False


def node_authorizer(request: Request, identity: Identity, state: State, *, selector_authz: bool = False) -> tuple[bool, str]:
    """(allowed, why) of the Node authorizer (no opinion counts as not allowed)."""
    node = node_name_of(identity)
    if node is None:
        return False, "not a node"
    if not node:
        return False, f"unknown node for user {identity.user!r}"
    if request.resource_request:
        kind = (request.api_group, request.resource)
        if kind in _GRAPH_KINDS:
            vertex = _GRAPH_KINDS[kind]
            read_verbs = ("get", "list", "watch") if vertex in ("secret", "configmap") else ("get",)
            if request.subresource and not (vertex == "pvc" and request.subresource == "status"):
                return False, f"cannot authorize {request.combined}"
            if vertex == "pvc" and request.subresource == "status":
                read_verbs = ("get", "update", "patch")
            if request.verb not in read_verbs:
                return False, f"can only {'/'.join(read_verbs)} individual {request.resource}"
            if not request.name:
                return False, "No Object name found"
            if not _related(state, node, vertex, request.namespace, request.name):
                return False, f"no relationship found between node '{node}' and this object"
            return True, "Node authorizer: related to the node"
        if kind == ("", "serviceaccounts"):
            if request.verb != "create" or not request.name:
                return False, "can only create tokens for individual service accounts"
            if request.subresource != "token":
                return False, "can only create token subresource of serviceaccount"
            pods = [pod for key, pod in state.items("pods") if (pod.get("spec") or {}).get("nodeName") == node and key.partition("/")[0] == request.namespace]
            if any(("serviceaccount", request.name) in _pod_references(pod) for pod in pods):
                return True, "Node authorizer: a pod on the node runs as this account"
            return False, f"no relationship found between node '{node}' and this object"
        if kind == ("coordination.k8s.io", "leases"):
            return _by_name(request, node, "lease", namespace=NODE_LEASE_NAMESPACE)
        if kind == ("storage.k8s.io", "csinodes"):
            return _by_name(request, node, "CSINode")
        if kind == ("resource.k8s.io", "resourceslices"):
            return _resource_slice(request, node, state, selector_authz)
        if selector_authz and kind == ("", "pods") and not request.subresource and request.verb in ("get", "list", "watch"):
            if request.name:
                related = _related(state, node, "pod", request.namespace, request.name)
                return related, ("Node authorizer: a pod bound to the node" if related else f"no relationship found between node '{node}' and this object")
            if request.verb != "get" and _field_equals(request.field_selector, "spec.nodeName", node):
                return True, "Node authorizer: pods filtered to the node"
            return False, "can only list/watch pods with spec.nodeName field selector"
        if selector_authz and kind == ("", "nodes") and not request.subresource and request.verb in ("get", "list", "watch"):
            if request.name == node or (request.verb != "get" and _field_equals(request.field_selector, "metadata.name", node)):
                return True, "Node authorizer: its own Node"
            return False, "node can only read its own Node"
    for rule in NODE_RULES:
        if rule_allows(request, rule):
            return True, "Node authorizer: node rules"
    return False, f"node '{node}' may not {request.verb} {request.combined or request.path}"


def _by_name(request: Request, node: str, what: str, namespace: str | None = None) -> tuple[bool, str]:
    """Leases and CSINodes: get, create, update, patch, delete of the node's own (a create
    is not checked by name: the authorizer does not see the body)."""
    if request.verb not in ("get", "create", "update", "patch", "delete"):
        return False, f"can only get, create, update, patch, or delete a {what}"
    if request.subresource:
        return False, f"cannot authorize {what} subresources"
    if namespace is not None and request.namespace != namespace:
        return False, f"can only access leases in the {namespace!r} system namespace"
    if request.verb != "create" and request.name != node:
        return False, f"can only access the {what} with the same name as the requesting node"
    return True, f"Node authorizer: its own {what}"


def _resource_slice(request: Request, node: str, state: State, selector_authz: bool) -> tuple[bool, str]:
    if request.subresource:
        return False, "cannot authorize ResourceSlice subresources"
    if request.verb == "create":
        return True, "Node authorizer: NodeRestriction checks a created ResourceSlice"
    if request.verb in ("get", "update", "patch", "delete"):
        if not request.name:
            return False, "No Object name found"
        related = _related(state, node, "resourceslice", "", request.name)
        return related, ("Node authorizer: its own ResourceSlice" if related else f"no relationship found between node '{node}' and this object")
    if request.verb in ("list", "watch", "deletecollection"):
        if not selector_authz or _field_equals(request.field_selector, "nodeName", node):
            return True, "Node authorizer: ResourceSlices of the node"
        return False, "can only list/watch/deletecollection resourceslices with nodeName field selector"
    return False, f"cannot {request.verb} ResourceSlices"


# =========================================================================== admission
_KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
})


def _restricted_label(key: str) -> bool:
    """A label a kubelet may not set or change on its Node (the NodeRestriction section
    of the admission controllers page; ``kubeletapis.IsKubeletLabel``)."""
    prefix = key.partition("/")[0] if "/" in key else ""
    if prefix == "node-restriction.kubernetes.io" or prefix.endswith(".node-restriction.kubernetes.io"):
        return True
    if not (prefix in ("kubernetes.io", "k8s.io") or prefix.endswith((".kubernetes.io", ".k8s.io"))):
        return False
    kubelet_prefixes = ("kubelet.kubernetes.io", "node.kubernetes.io")
    return not (key in _KUBELET_LABELS or prefix in kubelet_prefixes or prefix.endswith(tuple("." + p for p in kubelet_prefixes)))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (what ``kubectl patch --type merge`` sends)."""
    if not isinstance(patch, dict):
        return json.loads(json.dumps(patch))
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _new_object(request: Request, old: Obj | None) -> Obj | None:
    """The object admission sees: the body of a create or update, the patched stored
    object of a patch."""
    if request.verb in ("create", "update"):
        return request.body
    if request.verb == "patch":
        return merge_patch(old or {}, request.body or {}) if old is not None else None
    return None


def node_restriction(request: Request, identity: Identity, state: State) -> tuple[bool, str]:
    """(allowed, why) of the NodeRestriction admission plugin for a node's request."""
    node = node_name_of(identity)
    if node is None or not request.resource_request or request.verb in ("get", "list", "watch"):
        return True, ""
    if not node:
        return False, f"NodeRestriction: could not determine node from user {identity.user!r}"
    kind = (request.api_group, request.resource)
    if kind == ("", "pods"):
        return _node_pod(request, node, state)
    if kind == ("", "nodes"):
        return _node_node(request, node, state)
    if kind == ("coordination.k8s.io", "leases"):
        name = (request.body or {}).get("metadata", {}).get("name", "") if request.verb == "create" else request.name
        if request.namespace != NODE_LEASE_NAMESPACE:
            return False, f"NodeRestriction: node {node} can only access leases in {NODE_LEASE_NAMESPACE}"
        if name != node:
            return False, f"NodeRestriction: node {node} can only access its own lease, not {name!r}"
    return True, ""


def _node_pod(request: Request, node: str, state: State) -> tuple[bool, str]:
    old = state.get("pods", _ns_key(request.namespace, request.name)) if request.name else None
    bound_to = ((old or {}).get("spec") or {}).get("nodeName", "")
    where = f"pod {request.namespace}/{request.name} is bound to {bound_to or 'no node'}"
    if request.subresource == "":
        if request.verb == "create":
            body = request.body or {}
            if MIRROR_ANNOTATION not in (_meta(body).get("annotations") or {}):
                return False, f"NodeRestriction: node {node} can only create mirror pods"
            if (body.get("spec") or {}).get("nodeName") != node:
                return False, f"NodeRestriction: node {node} can only create pods bound to itself"
            return True, ""
        if request.verb == "delete":
            return (True, "") if bound_to == node else (False, f"NodeRestriction: node {node} can only delete pods bound to itself ({where})")
        return False, f"NodeRestriction: node {node} can only create and delete mirror pods"
    if request.subresource == "status":
        if bound_to != node:
            return False, f"NodeRestriction: node {node} can only update the status of pods bound to itself ({where})"
        new = _new_object(request, old)
        if new is not None and (_meta(new).get("labels") or {}) != (_meta(old or {}).get("labels") or {}):
            return False, f"NodeRestriction: node {node} cannot update labels through pod status (KEP-1314)"
        return True, ""
    if request.subresource == "eviction":
        return (True, "") if bound_to == node else (False, f"NodeRestriction: node {node} can only evict pods bound to itself ({where})")
    return False, f"NodeRestriction: node {node} may not use pods/{request.subresource}"


def _node_node(request: Request, node: str, state: State) -> tuple[bool, str]:
    old = state.get("nodes", request.name) if request.name else None
    if old is None and request.verb in ("update", "patch"):
        return False, f"node {request.name!r} does not exist in this state (the write could not have been admitted)"
    new = _new_object(request, old)
    name = request.name or _meta(new or {}).get("name", "")
    if name != node:
        return False, f"NodeRestriction: node {node} is not allowed to modify node {name!r}"
    if new is None:
        return True, ""
    old_meta, new_meta = _meta(old or {}), _meta(new)
    if (new_meta.get("ownerReferences") or []) != (old_meta.get("ownerReferences") or []):
        return False, f"NodeRestriction: node {node} may not change its owner references (CVE-2025-5187)"
    if request.verb != "create" and ((new.get("spec") or {}).get("taints") or []) != (((old or {}).get("spec") or {}).get("taints") or []):
        return False, f"NodeRestriction: node {node} may not modify its taints"
    old_labels, new_labels = old_meta.get("labels") or {}, new_meta.get("labels") or {}
    changed = sorted(key for key in {*old_labels, *new_labels} if old_labels.get(key) != new_labels.get(key) and _restricted_label(key))
    if changed:
        return False, f"NodeRestriction: node {node} may not set or change the labels {', '.join(changed)}"
    return True, ""


def namespace_lifecycle(request: Request, state: State) -> tuple[bool, str]:
    """(allowed, why) of NamespaceLifecycle: creates and updates of namespaced objects need
    an existing namespace (the immortal ones always exist); creates one that is not
    Terminating."""
    if not request.resource_request or not request.namespace or request.resource == "namespaces":
        return True, ""
    operation = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE"}.get(request.verb)
    if operation is None or (request.subresource and request.subresource not in ("status",)):
        return True, ""
    namespace = state.get("namespaces", request.namespace)
    if namespace is None:
        if request.namespace in IMMORTAL_NAMESPACES:
            return True, ""
        return False, f"NamespaceLifecycle: namespace {request.namespace} does not exist"
    terminating = (namespace.get("status") or {}).get("phase") == "Terminating" or bool(_meta(namespace).get("deletionTimestamp"))
    if operation == "CREATE" and terminating:
        return False, f"NamespaceLifecycle: namespace {request.namespace} is being terminated"
    return True, ""


# =========================================================================== the whole
def expect(credentials: Mapping[str, Any], request: Request, state: State, *, selector_authz: bool = False,
           extra_node_rules: Iterable[Obj] = PROXIER_RULES, authorizer: Callable[..., tuple[bool, str]] | None = None) -> Expectation:
    """What the boundaries decide for ``request`` made with ``credentials`` in ``state``."""
    identity, why = authenticate(credentials, state)
    if identity is None:
        return Expectation(False, "authentication", why)
    if MASTERS not in identity.groups:
        allowed, why = node_authorizer(request, identity, state, selector_authz=selector_authz)
        if not allowed and node_name_of(identity) and any(rule_allows(request, rule) for rule in extra_node_rules):
            allowed = True
        if not allowed:
            allowed, why = (authorizer or rbac)(request, identity, state)
        if not allowed:
            return Expectation(False, "authorization", why)
    for check in (lambda: namespace_lifecycle(request, state), lambda: node_restriction(request, identity, state)):
        allowed, why = check()
        if not allowed:
            return Expectation(False, "admission", why)
    return Expectation(True)

"""Authentication identities and authorization: table tests of RBAC rule matching against a
deliberately simple oracle, stories of bindings and subjects, the 403 message, the Node
authorizer, and Hypothesis properties (RBAC is additive; "*" grants every resource request)."""

from fnmatch import fnmatchcase

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaoskube.api.identity import (
    AUTHENTICATED_GROUP,
    MASTERS_GROUP,
    NODES_GROUP,
    UserInfo,
    authenticated_user,
    controller_manager_user,
    node_name_of,
    node_user,
    parse_service_account,
    scheduler_user,
    service_account_user,
    superuser,
)
from chaoskube.api.objects import (
    ClusterRole,
    ClusterRoleBinding,
    ObjectMeta,
    Pod,
    PodSpec,
    PolicyRule,
    Role,
    RoleBinding,
    RoleRef,
    Subject,
)
from chaoskube.apiserver.auth import (
    VERBS,
    Attributes,
    AuthorizationDecision,
    Decision,
    authorize,
    authorize_node,
    authorize_rbac,
    forbidden_message,
    rule_allows,
)

ALICE = authenticated_user("alice")
BOB = authenticated_user("bob", ["dev"])
RBAC = "rbac.authorization.k8s.io"


def rule(verbs, groups=(), resources=(), names=(), urls=()):
    return PolicyRule(verbs=list(verbs), api_groups=list(groups), resources=list(resources), resource_names=list(names), non_resource_urls=list(urls))


def role(name, namespace, *rules):
    return Role(metadata=ObjectMeta(name=name, namespace=namespace), rules=list(rules))


def cluster_role(name, *rules):
    return ClusterRole(metadata=ObjectMeta(name=name), rules=list(rules))


def user_subject(name):
    return Subject(kind="User", name=name, api_group=RBAC)


def group_subject(name):
    return Subject(kind="Group", name=name, api_group=RBAC)


def sa_subject(name, namespace=""):
    return Subject(kind="ServiceAccount", name=name, namespace=namespace)


def role_binding(name, namespace, kind, role_name, *subjects):
    return RoleBinding(metadata=ObjectMeta(name=name, namespace=namespace), role_ref=RoleRef(api_group=RBAC, kind=kind, name=role_name), subjects=list(subjects))


def cluster_role_binding(name, role_name, *subjects, kind="ClusterRole"):
    return ClusterRoleBinding(metadata=ObjectMeta(name=name), role_ref=RoleRef(api_group=RBAC, kind=kind, name=role_name), subjects=list(subjects))


def request(verb, resource, namespace="", name="", subresource="", group="", user=ALICE):
    return Attributes(user=user, verb=verb, resource=resource, subresource=subresource, namespace=namespace, name=name, api_group=group)


def pod(name, namespace, node_name):
    return Pod(metadata=ObjectMeta(name=name, namespace=namespace), spec=PodSpec(node_name=node_name))


# -- identities -----------------------------------------------------------------------------


def test_service_account_identity_has_kubernetes_groups():
    user = service_account_user("kube-system", "replicaset-controller")
    assert user.name == "system:serviceaccount:kube-system:replicaset-controller"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
    assert parse_service_account(user.name) == ("kube-system", "replicaset-controller")


@pytest.mark.parametrize(
    "username",
    [
        "alice",
        "system:serviceaccount:",
        "system:serviceaccount:ns",
        "system:serviceaccount:ns:",
        "system:serviceaccount::name",
        "system:serviceaccount:ns:name:extra",
        "system:serviceaccount:Bad_NS:name",
        "system:serviceaccount:ns:Bad Name",
        "system:serviceaccounts:ns:name",
    ],
)
def test_parse_service_account_rejects_what_split_username_rejects(username):
    assert parse_service_account(username) is None


def test_node_identity_needs_both_name_prefix_and_group():
    assert node_name_of(node_user("n1")) == "n1"
    assert node_user("n1").groups == (NODES_GROUP, AUTHENTICATED_GROUP)
    assert node_name_of(authenticated_user("system:node:n1")) is None  # no system:nodes
    assert node_name_of(authenticated_user("kubelet", [NODES_GROUP])) is None  # no prefix
    assert node_name_of(UserInfo("system:node:", (NODES_GROUP,))) == ""  # a node, name unknown


def test_control_plane_identities():
    assert controller_manager_user().name == "system:kube-controller-manager"
    assert scheduler_user().name == "system:kube-scheduler"
    assert MASTERS_GROUP in superuser().groups
    assert authenticated_user("x", [AUTHENTICATED_GROUP]).groups == (AUTHENTICATED_GROUP,)
    assert Decision is AuthorizationDecision
    assert "impersonate" in VERBS and "*" not in VERBS


def test_attributes_reject_programmer_errors():
    with pytest.raises(AssertionError):
        Attributes(user=ALICE, verb="get", resource="pods/status")
    # "*" is a request's verb only in an access review ("may I do everything?"): only a
    # rule granting "*" matches it (rbac.VerbMatches)
    everything = Attributes(user=ALICE, verb="*", resource="pods")
    assert not rule_allows(everything, PolicyRule(verbs=["get", "list", "watch", "create", "update", "patch", "delete"], api_groups=[""], resources=["pods"]))
    assert rule_allows(everything, PolicyRule(verbs=["*"], api_groups=[""], resources=["pods"]))
    with pytest.raises(AssertionError):
        Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz", namespace="default")


# -- rule matching: a table, and an oracle ---------------------------------------------------


@pytest.mark.parametrize(
    ("rule_", "attributes", "expected"),
    [
        (rule(["get"], [""], ["pods"]), request("get", "pods", "d", "p"), True),
        (rule(["get"], [""], ["pods"]), request("list", "pods", "d"), False),
        (rule(["*"], [""], ["pods"]), request("deletecollection", "pods", "d"), True),
        (rule(["get"], ["apps"], ["pods"]), request("get", "pods", "d", "p"), False),
        (rule(["get"], ["*"], ["deployments"]), request("get", "deployments", "d", "x", group="apps"), True),
        (rule(["get"], [""], ["*"]), request("get", "pods", "d", "p", subresource="log"), True),
        # "pods" does not cover its subresources; "pods/status" and "*/status" do.
        (rule(["update"], [""], ["pods"]), request("update", "pods", "d", "p", subresource="status"), False),
        (rule(["update"], [""], ["pods/status"]), request("update", "pods", "d", "p", subresource="status"), True),
        (rule(["update"], [""], ["pods/status"]), request("update", "pods", "d", "p"), False),
        (rule(["update"], [""], ["*/status"]), request("update", "nodes", "", "n", subresource="status"), True),
        (rule(["update"], [""], ["*/status"]), request("update", "nodes", "", "n"), False),
        (rule(["update"], [""], ["*/status"]), request("update", "pods", "d", "p", subresource="xstatus"), False),
        (rule(["create"], [""], ["pods/eviction"]), request("create", "pods", "d", "p", subresource="eviction"), True),
        (rule(["create"], [""], ["pods/binding"]), request("create", "pods", "d", "p", subresource="eviction"), False),
        (rule(["create"], [""], ["pods/binding", "bindings"]), request("create", "pods", "d", "p", subresource="binding"), True),
        # resourceNames: only requests that carry the name.
        (rule(["get", "list"], [""], ["pods"], ["p"]), request("get", "pods", "d", "p"), True),
        (rule(["get", "list"], [""], ["pods"], ["p"]), request("get", "pods", "d", "q"), False),
        (rule(["get", "list"], [""], ["pods"], ["p"]), request("list", "pods", "d"), False),
        (rule(["get", "list"], [""], ["pods"], ["p"]), request("list", "pods", "d", "p"), True),  # metadata.name field selector
        (rule(["watch"], [""], ["pods"], ["p"]), request("watch", "pods", "d"), False),
        (rule(["create"], [""], ["pods"], ["p"]), request("create", "pods", "d"), False),
        # a non-resource rule never matches a resource request, and the other way round
        (rule(["get"], urls=["*"]), request("get", "pods", "d", "p"), False),
        (rule(["get"], [""], ["*"]), Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz"), False),
        (rule(["get"], urls=["/healthz"]), Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz"), True),
        (rule(["get"], urls=["/healthz"]), Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz/etcd"), False),
        (rule(["get"], urls=["/healthz*"]), Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz/etcd"), True),
        (rule(["get"], urls=["/apis/*"]), Attributes(user=ALICE, verb="get", resource_request=False, path="/apis"), False),
        (rule(["get"], urls=["*"]), Attributes(user=ALICE, verb="get", resource_request=False, path="/version"), True),
        (rule(["post"], urls=["*"]), Attributes(user=ALICE, verb="get", resource_request=False, path="/version"), False),
    ],
)
def test_rule_matching_table(rule_, attributes, expected):
    assert rule_allows(attributes, rule_) is expected
    assert oracle_rule_allows(attributes, rule_) is expected


def oracle_rule_allows(attributes, rule_):
    """A deliberately simple oracle: every rule entry is a shell glob over the request's
    words ("*" everything, "*/status" any resource's status, "/apis*" a prefix)."""

    def any_glob(value, patterns):
        return any(fnmatchcase(value, pattern) for pattern in patterns)

    if not any_glob(attributes.verb, rule_.verbs):
        return False
    if not attributes.resource_request:
        return any_glob(attributes.path, rule_.non_resource_urls)
    resource = "/".join(filter(None, [attributes.resource, attributes.subresource]))
    return (
        any_glob(attributes.api_group, rule_.api_groups)
        and any_glob(resource, rule_.resources)
        and (not rule_.resource_names or attributes.name in rule_.resource_names)
    )


WORDS_VERBS = ["get", "list", "create", "update"]
WORDS_GROUPS = ["", "apps"]
WORDS_RESOURCES = ["pods", "nodes", "deployments"]
WORDS_SUBRESOURCES = ["", "status", "eviction"]
WORDS_NAMES = ["", "a", "b"]
WORDS_PATHS = ["/healthz", "/healthz/etcd", "/apis", "/apis/apps", "/version"]

rules = st.builds(
    rule,
    st.lists(st.sampled_from(["*", *WORDS_VERBS]), max_size=3),
    st.lists(st.sampled_from(["*", *WORDS_GROUPS]), max_size=2),
    st.lists(st.sampled_from(["*", "*/status", "*/eviction", "pods/status", "pods/eviction", *WORDS_RESOURCES]), max_size=3),
    st.lists(st.sampled_from(["a", "b"]), max_size=2),
    st.lists(st.sampled_from(["*", "/healthz", "/healthz*", "/apis/*", "/version"]), max_size=2),
)
resource_requests = st.builds(
    lambda verb, group, resource, subresource, name, namespace, user: Attributes(
        user=user, verb=verb, resource=resource, subresource=subresource, name=name, namespace=namespace, api_group=group
    ),
    st.sampled_from(WORDS_VERBS),
    st.sampled_from(WORDS_GROUPS),
    st.sampled_from(WORDS_RESOURCES),
    st.sampled_from(WORDS_SUBRESOURCES),
    st.sampled_from(WORDS_NAMES),
    st.sampled_from(["", "default", "other"]),
    st.sampled_from([ALICE, BOB, service_account_user("default", "robot"), service_account_user("other", "robot")]),
)
non_resource_requests = st.builds(
    lambda verb, path: Attributes(user=ALICE, verb=verb, resource_request=False, path=path),
    st.sampled_from(WORDS_VERBS),
    st.sampled_from(WORDS_PATHS),
)


@settings(max_examples=400, deadline=None)
@given(rules, st.one_of(resource_requests, non_resource_requests))
def test_rule_matching_agrees_with_the_glob_oracle(rule_, attributes):
    assert rule_allows(attributes, rule_) == oracle_rule_allows(attributes, rule_)


# -- RBAC: bindings, scopes, subjects --------------------------------------------------------

POD_READER = cluster_role("pod-reader", rule(["get", "list", "watch"], [""], ["pods"]))


def test_forbidden_message_is_the_api_servers():
    decision = authorize_rbac(request("list", "pods", "default"))
    assert decision == AuthorizationDecision(False, 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"')
    assert forbidden_message(request("get", "deployments", "ns", "web", group="apps")) == (
        'deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace "ns"'
    )
    assert forbidden_message(request("update", "nodes", "", "n1", subresource="status")) == (
        'nodes "n1" is forbidden: User "alice" cannot update resource "nodes/status" in API group "" at the cluster scope'
    )
    assert forbidden_message(Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz"), "why") == (
        'forbidden: User "alice" cannot get path "/healthz": why'
    )
    assert forbidden_message(request("get", "pods", "d", "p", user=authenticated_user('ev"il'))).count('\\"') == 1


def test_cluster_role_binding_grants_in_every_namespace_and_says_which():
    binding = cluster_role_binding("read-pods", "pod-reader", user_subject("alice"))
    for namespace in ("default", "kube-system", ""):
        decision = authorize_rbac(request("list", "pods", namespace), cluster_roles=[POD_READER], cluster_role_bindings=[binding])
        assert decision.allowed, decision
    assert decision.reason == 'RBAC: allowed by ClusterRoleBinding "read-pods" of ClusterRole "pod-reader" to User "alice"'
    assert not authorize_rbac(request("delete", "pods", "default", "p"), cluster_roles=[POD_READER], cluster_role_bindings=[binding]).allowed
    assert not authorize_rbac(request("list", "pods", "default", user=BOB), cluster_roles=[POD_READER], cluster_role_bindings=[binding]).allowed


def test_role_binding_grants_only_in_its_namespace():
    roles = [role("reader", "team-a", rule(["get", "list"], [""], ["pods"]))]
    bindings = [role_binding("read", "team-a", "Role", "reader", user_subject("alice"))]
    assert authorize_rbac(request("list", "pods", "team-a"), roles=roles, role_bindings=bindings).allowed
    assert not authorize_rbac(request("list", "pods", "team-b"), roles=roles, role_bindings=bindings).allowed
    assert not authorize_rbac(request("list", "pods", ""), roles=roles, role_bindings=bindings).allowed  # all namespaces
    decision = authorize_rbac(request("get", "pods", "team-a", "p"), roles=roles, role_bindings=bindings)
    assert decision.reason == 'RBAC: allowed by RoleBinding "read/team-a" of Role "reader" to User "alice"'


def test_role_binding_cannot_use_a_role_of_another_namespace():
    roles = [role("reader", "team-b", rule(["list"], [""], ["pods"]))]
    bindings = [role_binding("read", "team-a", "Role", "reader", user_subject("alice"))]
    decision = authorize_rbac(request("list", "pods", "team-a"), roles=roles, role_bindings=bindings)
    assert not decision.allowed
    assert decision.reason.endswith(': RBAC: role.rbac.authorization.k8s.io "reader" not found')


def test_cluster_role_through_role_binding_grants_only_in_that_namespace():
    bindings = [role_binding("read", "team-a", "ClusterRole", "pod-reader", user_subject("alice"))]
    assert authorize_rbac(request("list", "pods", "team-a"), cluster_roles=[POD_READER], role_bindings=bindings).allowed
    assert not authorize_rbac(request("list", "pods", "team-b"), cluster_roles=[POD_READER], role_bindings=bindings).allowed
    assert not authorize_rbac(request("list", "pods", ""), cluster_roles=[POD_READER], role_bindings=bindings).allowed


def test_missing_roles_grant_nothing_and_are_reported_once():
    bindings = [
        cluster_role_binding("a", "gone", user_subject("alice")),
        cluster_role_binding("b", "gone", user_subject("alice")),
        cluster_role_binding("c", "local", user_subject("alice"), kind="Role"),  # a CRB cannot use a Role
    ]
    decision = authorize_rbac(request("get", "pods", "d", "p"), cluster_role_bindings=bindings)
    assert decision.reason.endswith(': RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "local" not found]')
    # a binding that does not apply to the user is never resolved
    assert authorize_rbac(request("get", "pods", "d", "p", user=BOB), cluster_role_bindings=bindings[:1]).reason.endswith('in the namespace "d"')


def test_subresources_need_their_own_rules():
    editor = cluster_role("editor", rule(["get", "update", "create"], [""], ["pods"]))
    status = cluster_role("status", rule(["update", "patch"], [""], ["pods/status"]))
    evictor = cluster_role("evictor", rule(["create"], [""], ["pods/eviction"]))
    binder = cluster_role("binder", rule(["create"], [""], ["pods/binding"]))
    roles = [editor, status, evictor, binder]

    def allowed(role_name, verb, subresource):
        bindings = [cluster_role_binding("b", role_name, user_subject("alice"))]
        return authorize_rbac(request(verb, "pods", "d", "p", subresource=subresource), cluster_roles=roles, cluster_role_bindings=bindings).allowed

    assert allowed("editor", "update", "") and not allowed("editor", "update", "status")
    assert not allowed("editor", "create", "eviction") and not allowed("editor", "create", "binding")
    assert allowed("status", "patch", "status") and not allowed("status", "patch", "")
    assert allowed("evictor", "create", "eviction") and not allowed("evictor", "create", "binding")
    assert allowed("binder", "create", "binding") and not allowed("binder", "create", "eviction")


def test_resource_names_do_not_grant_list():
    roles = [cluster_role("one-pod", rule(["get", "list", "watch", "delete"], [""], ["pods"], ["web-0"]))]
    bindings = [cluster_role_binding("b", "one-pod", user_subject("alice"))]
    ask = lambda verb, name="": authorize_rbac(request(verb, "pods", "d", name), cluster_roles=roles, cluster_role_bindings=bindings).allowed  # noqa: E731
    assert ask("get", "web-0") and ask("delete", "web-0")
    assert not ask("get", "web-1")
    assert not ask("list") and not ask("watch")
    assert ask("list", "web-0")  # list with fieldSelector metadata.name=web-0


def test_service_account_subjects_default_to_the_binding_namespace():
    robot_a = service_account_user("team-a", "robot")
    robot_b = service_account_user("team-b", "robot")
    bindings = [role_binding("read", "team-a", "ClusterRole", "pod-reader", sa_subject("robot"))]
    assert authorize_rbac(request("list", "pods", "team-a", user=robot_a), cluster_roles=[POD_READER], role_bindings=bindings).allowed
    assert not authorize_rbac(request("list", "pods", "team-a", user=robot_b), cluster_roles=[POD_READER], role_bindings=bindings).allowed
    # explicit namespace: a service account of another namespace, granted in team-a only
    bindings = [role_binding("read", "team-a", "ClusterRole", "pod-reader", sa_subject("robot", "team-b"))]
    decision = authorize_rbac(request("list", "pods", "team-a", user=robot_b), cluster_roles=[POD_READER], role_bindings=bindings)
    assert decision.reason == 'RBAC: allowed by RoleBinding "read/team-a" of ClusterRole "pod-reader" to ServiceAccount "robot/team-b"'
    assert not authorize_rbac(request("list", "pods", "team-b", user=robot_b), cluster_roles=[POD_READER], role_bindings=bindings).allowed
    # in a ClusterRoleBinding a service account subject needs its namespace
    crbs = [cluster_role_binding("read", "pod-reader", sa_subject("robot"))]
    assert not authorize_rbac(request("list", "pods", "team-a", user=robot_a), cluster_roles=[POD_READER], cluster_role_bindings=crbs).allowed
    crbs = [cluster_role_binding("read", "pod-reader", sa_subject("robot", "team-a"))]
    assert authorize_rbac(request("list", "pods", "team-b", user=robot_a), cluster_roles=[POD_READER], cluster_role_bindings=crbs).allowed
    # a user who merely has the service account's name is not the service account
    impostor = authenticated_user("robot")
    assert not authorize_rbac(request("list", "pods", "team-a", user=impostor), cluster_roles=[POD_READER], cluster_role_bindings=crbs).allowed


def test_group_subjects():
    bindings = [cluster_role_binding("devs", "pod-reader", group_subject("dev"))]
    assert authorize_rbac(request("list", "pods", "d", user=BOB), cluster_roles=[POD_READER], cluster_role_bindings=bindings).allowed
    assert not authorize_rbac(request("list", "pods", "d", user=ALICE), cluster_roles=[POD_READER], cluster_role_bindings=bindings).allowed
    everyone_sa = [role_binding("sas", "team-a", "ClusterRole", "pod-reader", group_subject("system:serviceaccounts:team-a"))]
    robot = service_account_user("team-a", "robot")
    assert authorize_rbac(request("list", "pods", "team-a", user=robot), cluster_roles=[POD_READER], role_bindings=everyone_sa).allowed
    authenticated = [cluster_role_binding("all", "pod-reader", group_subject(AUTHENTICATED_GROUP))]
    assert authorize_rbac(request("list", "pods", "x", user=robot), cluster_roles=[POD_READER], cluster_role_bindings=authenticated).allowed
    assert not authorize_rbac(request("list", "pods", "x", user=UserInfo("anon")), cluster_roles=[POD_READER], cluster_role_bindings=authenticated).allowed


def test_non_resource_urls_are_granted_by_cluster_role_bindings_only():
    health = cluster_role("health", rule(["get"], urls=["/healthz*", "/version"]))
    healthz = Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz/etcd")
    assert authorize_rbac(healthz, cluster_roles=[health], cluster_role_bindings=[cluster_role_binding("h", "health", user_subject("alice"))]).allowed
    assert not authorize_rbac(healthz, cluster_roles=[health], role_bindings=[role_binding("h", "default", "ClusterRole", "health", user_subject("alice"))]).allowed
    denied = authorize_rbac(Attributes(user=ALICE, verb="get", resource_request=False, path="/metrics"), cluster_roles=[health])
    assert denied.reason == 'forbidden: User "alice" cannot get path "/metrics"'


def test_system_masters_is_always_allowed():
    for attributes in (request("deletecollection", "nodes", user=superuser()), Attributes(user=superuser(), verb="get", resource_request=False, path="/x")):
        assert authorize_rbac(attributes).allowed
        assert authorize(attributes).allowed


def test_empty_namespace_objects_count_as_default():
    roles = [role("reader", "", rule(["list"], [""], ["pods"]))]
    bindings = [role_binding("read", "", "Role", "reader", user_subject("alice"))]
    assert authorize_rbac(request("list", "pods", "default"), roles=roles, role_bindings=bindings).allowed


# -- RBAC properties -------------------------------------------------------------------------

NAMESPACES = ["default", "other"]
subjects = st.one_of(
    st.sampled_from(["alice", "bob"]).map(user_subject),
    st.sampled_from(["dev", "system:serviceaccounts", AUTHENTICATED_GROUP]).map(group_subject),
    st.builds(sa_subject, st.just("robot"), st.sampled_from(["", *NAMESPACES])),
)
role_refs = st.tuples(st.sampled_from(["Role", "ClusterRole"]), st.sampled_from(["r0", "r1", "missing"]))
bindings = st.one_of(
    st.builds(
        lambda ref, namespace, subjects_: role_binding("rb", namespace, ref[0], ref[1], *subjects_),
        role_refs, st.sampled_from(NAMESPACES), st.lists(subjects, max_size=2),
    ),
    st.builds(
        lambda ref, subjects_: cluster_role_binding("crb", ref[1], *subjects_, kind=ref[0]),
        role_refs, st.lists(subjects, max_size=2),
    ),
)
policies = st.fixed_dictionaries(
    {
        "roles": st.lists(st.builds(lambda name, namespace, rules_: role(name, namespace, *rules_), st.sampled_from(["r0", "r1"]), st.sampled_from(NAMESPACES), st.lists(rules, max_size=2)), max_size=3),
        "cluster_roles": st.lists(st.builds(lambda name, rules_: cluster_role(name, *rules_), st.sampled_from(["r0", "r1"]), st.lists(rules, max_size=2)), max_size=2),
        "bindings": st.lists(bindings, max_size=4),
    }
)


def split(policy):
    return dict(
        roles=policy["roles"],
        cluster_roles=policy["cluster_roles"],
        role_bindings=[b for b in policy["bindings"] if isinstance(b, RoleBinding)],
        cluster_role_bindings=[b for b in policy["bindings"] if isinstance(b, ClusterRoleBinding)],
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies, bindings, st.one_of(resource_requests, non_resource_requests))
def test_adding_a_binding_never_removes_a_permission(policy, extra, attributes):
    before = authorize_rbac(attributes, **split(policy)).allowed
    policy["bindings"] = [*policy["bindings"], extra]
    after = authorize_rbac(attributes, **split(policy)).allowed
    assert after or not before


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies, st.one_of(resource_requests, non_resource_requests))
def test_rbac_agrees_with_an_oracle_over_effective_grants(policy, attributes):
    """The oracle: a binding grants its role's rules to its subjects, a RoleBinding only in
    its namespace; the request is allowed when any granted rule matches (by the glob oracle)."""
    expected = False
    for binding in policy["bindings"]:
        namespace = binding.metadata.namespace if isinstance(binding, RoleBinding) else ""
        if namespace and attributes.namespace != namespace:
            continue
        names = {attributes.user.name}
        subject_users = {
            s.name if s.kind == "User" else f"system:serviceaccount:{s.namespace or namespace}:{s.name}"
            for s in binding.subjects
            if s.kind in ("User", "ServiceAccount") and (s.kind == "User" or s.namespace or namespace)
        }
        subject_groups = {s.name for s in binding.subjects if s.kind == "Group"}
        if not (names & subject_users or subject_groups & set(attributes.user.groups)):
            continue
        if binding.role_ref.kind == "Role":
            # the first Role of that name and namespace counts, as in a store
            firsts = [x for x in policy["roles"] if x.metadata.namespace == namespace and x.metadata.name == binding.role_ref.name][:1]
            granted = [r for x in firsts for r in x.rules] if namespace else []
        else:
            firsts = [x for x in policy["cluster_roles"] if x.metadata.name == binding.role_ref.name][:1]
            granted = [r for x in firsts for r in x.rules]
        expected = expected or any(oracle_rule_allows(attributes, r) for r in granted)
    assert authorize_rbac(attributes, **split(policy)).allowed == expected


@settings(max_examples=200, deadline=None)
@given(resource_requests, st.sampled_from(["user", "group", "sa"]))
def test_a_star_rule_everywhere_grants_every_resource_request(attributes, how):
    admin = cluster_role("admin", rule(["*"], ["*"], ["*"]))
    subject = {
        "user": user_subject(attributes.user.name),
        "group": group_subject(AUTHENTICATED_GROUP),
        "sa": sa_subject("robot", "default") if attributes.user.name.startswith("system:serviceaccount:default:") else user_subject(attributes.user.name),
    }[how]
    decision = authorize_rbac(attributes, cluster_roles=[admin], cluster_role_bindings=[cluster_role_binding("admin", "admin", subject)])
    assert decision.allowed, decision
    # the same ClusterRole through a RoleBinding grants everything inside that namespace only
    in_namespace = authorize_rbac(attributes, cluster_roles=[admin], role_bindings=[role_binding("admin", "default", "ClusterRole", "admin", subject)])
    assert in_namespace.allowed == (attributes.namespace == "default")


# -- the Node authorizer ---------------------------------------------------------------------

N1 = node_user("n1")


def node_request(verb, resource, namespace="", name="", subresource="", group=""):
    return request(verb, resource, namespace, name, subresource, group, user=N1)


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        (node_request("get", "nodes", name="n1"), True),
        (node_request("get", "nodes", name="n2"), True),  # reads are not narrowed (AuthorizeNodeWithSelectors off)
        (node_request("list", "nodes"), True),
        (node_request("watch", "pods"), True),
        (node_request("list", "services"), True),
        (node_request("get", "endpoints", "d", "svc"), True),
        (node_request("watch", "endpointslices", group="discovery.k8s.io"), True),
        (node_request("list", "secrets", "d"), False),
        (node_request("get", "nodes", name="n1", subresource="status"), False),
        # Nodes: create, update, patch, status -- any name: NodeRestriction limits it to its own
        (node_request("create", "nodes"), True),
        (node_request("create", "nodes", name="n1"), True),
        (node_request("update", "nodes", name="n1"), True),
        (node_request("patch", "nodes", name="n1", subresource="status"), True),
        (node_request("update", "nodes", name="n1", subresource="status"), True),
        (node_request("update", "nodes", name="n2"), True),
        (node_request("patch", "nodes", name="n2", subresource="status"), True),
        (node_request("delete", "nodes", name="n1"), False),  # self-deletion is not allowed
        # its Lease in kube-node-lease only (a create is not checked by name)
        (node_request("get", "leases", "kube-node-lease", "n1", group="coordination.k8s.io"), True),
        (node_request("create", "leases", "kube-node-lease", group="coordination.k8s.io"), True),
        (node_request("update", "leases", "kube-node-lease", "n1", group="coordination.k8s.io"), True),
        (node_request("update", "leases", "kube-node-lease", "n2", group="coordination.k8s.io"), False),
        (node_request("get", "leases", "kube-node-lease", "n2", group="coordination.k8s.io"), False),
        (node_request("update", "leases", "kube-system", "n1", group="coordination.k8s.io"), False),
        (node_request("list", "leases", "kube-node-lease", group="coordination.k8s.io"), False),
        # pods: create and delete, status, eviction -- any pod: NodeRestriction limits them
        (node_request("create", "pods", "d"), True),
        (node_request("delete", "pods", "d", "p"), True),
        (node_request("patch", "pods", "d", "p", subresource="status"), True),
        (node_request("create", "pods", "d", "p", subresource="eviction"), True),
        (node_request("update", "pods", "d", "p"), False),  # the spec is not the kubelet's
        (node_request("get", "pods", "d", "p", subresource="log"), False),
        (node_request("delete", "services", "d", "svc"), False),
        (node_request("create", "clusterrolebindings", group="rbac.authorization.k8s.io"), False),
        (node_request("list", "namespaces"), False),
        (Attributes(user=N1, verb="get", resource_request=False, path="/healthz"), False),
    ],
)
def test_node_authorizer_table(attributes, expected):
    decision = authorize_node(attributes)
    assert decision.allowed is expected, decision
    if not expected:
        assert decision.reason.startswith(forbidden_message(attributes)), decision


def test_node_authorizer_leaves_which_pod_to_node_restriction():
    """Upstream's node rules grant pod writes for every pod (node_authorizer_test.go:
    "update unrelated pod status ... guarded by NodeRestriction admission"); the pod the
    request names does not change the decision."""
    mine, theirs = pod("web", "d", "n1"), pod("db", "d", "n2")
    for verb, subresource in (("update", "status"), ("patch", "status"), ("create", "eviction"), ("delete", "")):
        for which in (mine, theirs, None):
            assert authorize_node(node_request(verb, "pods", "d", "web", subresource), pod=which).allowed


def test_node_authorizer_ignores_non_nodes_and_unknown_nodes():
    assert authorize_node(request("get", "nodes", name="n1")).reason == forbidden_message(request("get", "nodes", name="n1"))
    nameless = UserInfo("system:node:", (NODES_GROUP, AUTHENTICATED_GROUP))
    decision = authorize_node(request("get", "nodes", name="n1", user=nameless))
    assert not decision.allowed and decision.reason.endswith(': unknown node for user "system:node:"')
    pretender = authenticated_user("system:node:n1")  # the name without the group
    assert not authorize_node(request("update", "nodes", name="n1", user=pretender)).allowed


def test_union_of_node_and_rbac():
    events = cluster_role("events", rule(["create", "patch"], ["", "events.k8s.io"], ["events"]))
    node_events = [cluster_role_binding("node-events", "events", group_subject(NODES_GROUP))]
    # Node allows what RBAC does not know about ...
    assert authorize(node_request("update", "nodes", name="n1")).allowed
    # ... RBAC allows what the Node authorizer does not ...
    assert authorize(node_request("create", "events", "d"), cluster_roles=[events], cluster_role_bindings=node_events).allowed
    # ... neither: denied, with both reasons
    bindings = [cluster_role_binding("gone", "gone", group_subject(NODES_GROUP))]
    decision = authorize(node_request("update", "pods", "d", "web"), cluster_role_bindings=bindings)
    assert decision == AuthorizationDecision(
        False,
        'pods "web" is forbidden: User "system:node:n1" cannot update resource "pods" in API group "" in the namespace "d": '
        "node 'n1' may not update pods; RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found",
    )
    # a normal user is denied with the bare message, as the API server answers
    assert authorize(request("list", "pods", "default")).reason == 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"'


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies, st.one_of(resource_requests, non_resource_requests))
def test_union_is_node_or_rbac(policy, attributes):
    for user in (attributes.user, N1):
        attributes_ = Attributes(**{**{f: getattr(attributes, f) for f in Attributes.__dataclass_fields__}, "user": user})
        expected = authorize_node(attributes_).allowed or authorize_rbac(attributes_, **split(policy)).allowed
        assert authorize(attributes_, **split(policy)).allowed == expected

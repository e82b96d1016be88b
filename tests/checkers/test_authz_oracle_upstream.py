"""The authorization oracle (chaoskube/checkers/authz_oracle.py) against upstream's own
table cases, transcribed row for row (every row kept):

- ``plugin/pkg/auth/authorizer/rbac/rbac_test.go``: ``TestAuthorizer`` (4 policies, their
  shouldPass / shouldFail requests) and ``TestRuleMatches`` (8 rules x their requests);
- ``pkg/apis/rbac/helpers_test.go``: ``TestResourceMatches`` (12 rows; its
  ``TestHelpersRoundTrip`` and ``TestPolicyRuleBuilder`` test how objects are built, not how
  they are evaluated, and have no counterpart here);
- ``pkg/registry/rbac/validation/rule_test.go``: ``TestDefaultRuleResolver`` (4 rows) and
  ``TestAppliesTo`` (9 rows);
- ``plugin/pkg/auth/authorizer/node/node_authorizer_test.go``: ``TestNodeAuthorizer``
  (117 rows over the sample graph of its ``generate()``; rows without a feature variant
  run with ``AuthorizeNodeWithSelectors`` off and on, as upstream runs them) and
  ``TestNodeAuthorizerSharedResources`` (9 rows and the two around removing a pod's
  volumes). Upstream's "Allow" is allowed here, "NoOpinion" is not.
"""

from __future__ import annotations

import pytest

from chaoskube.checkers.authz_oracle import (
    Identity,
    Request,
    State,
    applies_to,
    node_authorizer,
    rbac,
    resource_matches,
    rule_allows,
    rules_for,
)

ALLOW, NO = True, False


# =========================================================================== rbac_test.go
def new_rule(verbs, groups, resources, urls):
    return {"verbs": verbs.split(","), "apiGroups": groups.split(","), "resources": resources.split(","), "nonResourceURLs": urls.split(",")}


def subjects(*specs):
    out = []
    for spec in specs:
        kind, name = spec.split(":", 1)
        out.append({"kind": kind, "name": name})
    return out


def policy(cluster_roles=(), role_bindings=(), cluster_role_bindings=(), roles=()):
    tables = {"clusterroles": {}, "roles": {}, "rolebindings": {}, "clusterrolebindings": {}}
    for name, rules in cluster_roles:
        tables["clusterroles"][name] = {"metadata": {"name": name}, "rules": rules}
    for namespace, name, rules in roles:
        tables["roles"][f"{namespace}/{name}"] = {"metadata": {"name": name, "namespace": namespace}, "rules": rules}
    for index, (namespace, role, kind, subject_list) in enumerate(role_bindings):
        tables["rolebindings"][f"{namespace}/rb-{index}"] = {"metadata": {"name": f"rb-{index}", "namespace": namespace}, "roleRef": {"kind": kind, "name": role}, "subjects": subject_list}
    for index, (role, subject_list) in enumerate(cluster_role_bindings):
        tables["clusterrolebindings"][f"crb-{index}"] = {"metadata": {"name": f"crb-{index}"}, "roleRef": {"kind": "ClusterRole", "name": role}, "subjects": subject_list}
    return State(tables)


def default_attributes(user, groups, verb, resource, subresource, namespace, api_group):
    """``defaultAttributes``: groups split on commas (so "" is one empty group), no name."""
    return Identity(user, tuple(groups.split(","))), Request(verb=verb, resource=resource, subresource=subresource, namespace=namespace, api_group=api_group)


def non_resource(verb, path, name="", groups=()):
    return Identity(name, tuple(groups)), Request(verb=verb, resource_request=False, path=path)


AUTHORIZER_CASES = [
    (
        policy(cluster_roles=[("admin", [new_rule("*", "*", "*", "*")])], role_bindings=[("ns1", "admin", "ClusterRole", subjects("User:admin", "Group:admins"))]),
        [
            default_attributes("admin", "", "get", "Pods", "", "ns1", ""),
            default_attributes("admin", "", "watch", "Pods", "", "ns1", ""),
            default_attributes("admin", "group1", "watch", "Foobar", "", "ns1", ""),
            default_attributes("joe", "admins", "watch", "Foobar", "", "ns1", ""),
            default_attributes("joe", "group1,admins", "watch", "Foobar", "", "ns1", ""),
        ],
        [
            default_attributes("admin", "", "GET", "Pods", "", "ns2", ""),
            default_attributes("admin", "", "GET", "Nodes", "", "", ""),
            default_attributes("admin", "admins", "GET", "Pods", "", "ns2", ""),
            default_attributes("admin", "admins", "GET", "Nodes", "", "", ""),
        ],
    ),
    (
        policy(
            cluster_roles=[
                ("non-resource-url-getter", [new_rule("get", "", "", "/apis")]),
                ("non-resource-url", [new_rule("*", "", "", "/apis")]),
                ("non-resource-url-prefix", [new_rule("get", "", "", "/apis/*")]),
            ],
            cluster_role_bindings=[
                ("non-resource-url-getter", subjects("User:foo", "Group:bar")),
                ("non-resource-url", subjects("User:admin", "Group:admin")),
                ("non-resource-url-prefix", subjects("User:prefixed", "Group:prefixed")),
            ],
        ),
        [
            non_resource("get", "/apis", name="foo"),
            non_resource("get", "/apis", groups=["bar"]),
            non_resource("get", "/apis", name="admin"),
            non_resource("get", "/apis", groups=["admin"]),
            non_resource("watch", "/apis", name="admin"),
            non_resource("watch", "/apis", groups=["admin"]),
            non_resource("get", "/apis/v1", name="prefixed"),
            non_resource("get", "/apis/v1", groups=["prefixed"]),
            non_resource("get", "/apis/v1/foobar", name="prefixed"),
            non_resource("get", "/apis/v1/foorbar", groups=["prefixed"]),
        ],
        [
            # wrong verb
            non_resource("watch", "/apis", name="foo"),
            non_resource("watch", "/apis", groups=["bar"]),
            # wrong path
            non_resource("get", "/api/v1", name="foo"),
            non_resource("get", "/api/v1", groups=["bar"]),
            non_resource("get", "/api/v1", name="admin"),
            non_resource("get", "/api/v1", groups=["admin"]),
            # not covered by prefix
            non_resource("get", "/api/v1", name="prefixed"),
            non_resource("get", "/api/v1", groups=["prefixed"]),
        ],
    ),
    (
        policy(cluster_roles=[("admin", [new_rule("*", "*", "pods", "*")])], role_bindings=[("ns1", "admin", "ClusterRole", subjects("User:admin", "Group:admins"))]),
        [default_attributes("admin", "", "get", "pods", "", "ns1", "")],
        [default_attributes("admin", "", "get", "pods", "status", "ns1", "")],
    ),
    (
        policy(cluster_roles=[("admin", [new_rule("*", "*", "pods/status", "*")])], role_bindings=[("ns1", "admin", "ClusterRole", subjects("User:admin", "Group:admins"))]),
        [default_attributes("admin", "", "get", "pods", "status", "ns1", "")],
        [default_attributes("admin", "", "get", "pods", "", "ns1", "")],
    ),
]


@pytest.mark.parametrize("case", range(len(AUTHORIZER_CASES)))
def test_rbac_authorizer(case):
    state, should_pass, should_fail = AUTHORIZER_CASES[case]
    for identity, request in should_pass:
        assert rbac(request, identity, state)[0], f"case {case}: incorrectly restricted {identity} {request}"
    for identity, request in should_fail:
        assert not rbac(request, identity, state)[0], f"case {case}: incorrectly passed {identity} {request}"


def rule(verbs=(), groups=(), resources=(), urls=()):
    return {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources), "nonResourceURLs": list(urls)}


def resource_request(verb, group, resource, subresource=""):
    return Request(verb=verb, api_group=group, resource=resource, subresource=subresource)


def url_request(verb, url):
    return Request(verb=verb, resource_request=False, path=url)


def each(verbs, groups, resources):
    return [(v, g, r) for v in verbs for g in groups for r in resources]


RULE_MATCH_CASES = [
    ("star verb, exact match other", rule(["*"], ["group1"], ["resource1"]),
     {resource_request(v, g, r): (g, r) == ("group1", "resource1") for v, g, r in each(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"])}),
    ("star group, exact match other", rule(["verb1"], ["*"], ["resource1"]),
     {resource_request(v, g, r): (v, r) == ("verb1", "resource1") for v, g, r in each(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"])}),
    ("star resource, exact match other", rule(["verb1"], ["group1"], ["*"]),
     {resource_request(v, g, r): (v, g) == ("verb1", "group1") for v, g, r in each(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"])}),
    ("tuple expansion", rule(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"]),
     {resource_request(v, g, r): True for v, g, r in each(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"])}),
    ("subresource expansion", rule(["*"], ["*"], ["resource1/subresource1"]), {
        resource_request("verb1", "group1", "resource1", "subresource1"): True,
        resource_request("verb1", "group2", "resource1", "subresource2"): False,
        resource_request("verb1", "group1", "resource2", "subresource1"): False,
        resource_request("verb1", "group2", "resource2", "subresource1"): False,
        resource_request("verb2", "group1", "resource1", "subresource1"): True,
        resource_request("verb2", "group2", "resource1", "subresource2"): False,
        resource_request("verb2", "group1", "resource2", "subresource1"): False,
        resource_request("verb2", "group2", "resource2", "subresource1"): False,
    }),
    ("star nonresource, exact match other", rule(["verb1"], urls=["*"]),
     {url_request(v, u): v == "verb1" for v in ("verb1", "verb2") for u in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")}),
    ("star nonresource subpath", rule(["verb1"], urls=["/foo/*"]), {
        url_request("verb1", "/foo"): False,
        url_request("verb1", "/foo/bar"): True,
        url_request("verb1", "/foo/baz"): True,
        url_request("verb1", "/foo/bar/one"): True,
        url_request("verb1", "/foo/baz/one"): True,
        url_request("verb1", "/notfoo"): False,
        url_request("verb1", "/notfoo/bar"): False,
        url_request("verb1", "/notfoo/baz"): False,
        url_request("verb1", "/notfoo/bar/one"): False,
        url_request("verb1", "/notfoo/baz/one"): False,
    }),
    ("star verb, exact nonresource", rule(["*"], urls=["/foo", "/foo/bar/one"]),
     {url_request(v, u): u in ("/foo", "/foo/bar/one") for v in ("verb1", "verb2") for u in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")}),
]


@pytest.mark.parametrize(("name", "policy_rule", "expected"), RULE_MATCH_CASES, ids=[case[0] for case in RULE_MATCH_CASES])
def test_rule_matches(name, policy_rule, expected):
    assert len(expected) in (8, 10)
    for request, allowed in expected.items():
        assert rule_allows(request, policy_rule) is allowed, (name, request)


# =========================================================================== helpers_test.go
RESOURCE_MATCH_CASES = [
    ("all matches 01", ["*"], "foo", "", True),
    ("checks all rules", ["doesn't match", "*"], "foo", "", True),
    ("matches exact rule", ["foo/bar"], "foo/bar", "bar", True),
    ("matches exact rule 02", ["foo/bar"], "foo", "", False),
    ("matches subresource", ["*/scale"], "foo/scale", "scale", True),
    ("doesn't match partial subresource hit", ["foo/bar", "*/other"], "foo/other/segment", "other/segment", False),
    ("matches subresource with multiple slashes", ["*/other/segment"], "foo/other/segment", "other/segment", True),
    ("doesn't fail on empty", [""], "foo/other/segment", "other/segment", False),
    ("doesn't fail on slash", ["/"], "foo/other/segment", "other/segment", False),
    ("doesn't fail on missing subresource", ["*/"], "foo/other/segment", "other/segment", False),
    ("doesn't match on not star", ["*something/other/segment"], "foo/other/segment", "other/segment", False),
    ("doesn't match on something else", ["something/other/segment"], "foo/other/segment", "other/segment", False),
]


@pytest.mark.parametrize(("name", "resources", "combined", "subresource", "expected"), RESOURCE_MATCH_CASES, ids=[c[0] for c in RESOURCE_MATCH_CASES])
def test_resource_matches(name, resources, combined, subresource, expected):
    assert resource_matches(resources, combined, subresource) is expected


# =========================================================================== rule_test.go
READ_PODS = {"verbs": ["GET", "WATCH"], "apiGroups": ["v1"], "resources": ["pods"]}
READ_SERVICES = {"verbs": ["GET", "WATCH"], "apiGroups": ["v1"], "resources": ["services"]}
WRITE_NODES = {"verbs": ["PUT", "CREATE", "UPDATE"], "apiGroups": ["v1"], "resources": ["nodes"]}
ADMIN = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
STATIC_ROLES_1 = policy(
    roles=[("namespace1", "readthings", [READ_PODS, READ_SERVICES])],
    cluster_roles=[("cluster-admin", [ADMIN]), ("write-nodes", [WRITE_NODES])],
    role_bindings=[("namespace1", "readthings", "Role", subjects("User:foobar", "Group:group1"))],
    cluster_role_bindings=[("cluster-admin", subjects("User:admin", "Group:admin"))],
)


@pytest.mark.parametrize(("identity", "namespace", "effective"), [
    (Identity("foobar"), "namespace1", [READ_PODS, READ_SERVICES]),
    (Identity("foobar"), "namespace2", []),
    # Same as above but without a namespace. Only cluster rules should apply.
    (Identity("foobar", ("admin",)), "", [ADMIN]),
    (Identity(""), "", []),
])
def test_default_rule_resolver(identity, namespace, effective):
    def key(r):
        return repr(sorted(r.items()))

    assert sorted(map(key, rules_for(identity, namespace, STATIC_ROLES_1))) == sorted(map(key, effective))


@pytest.mark.parametrize(("subject_list", "identity", "namespace", "expected", "case"), [
    ([{"kind": "User", "name": "foobar"}], Identity("foobar"), "", True, "single subject that matches username"),
    ([{"kind": "User", "name": "barfoo"}, {"kind": "User", "name": "foobar"}], Identity("foobar"), "", True, "multiple subjects, one that matches username"),
    ([{"kind": "User", "name": "barfoo"}, {"kind": "User", "name": "foobar"}], Identity("zimzam"), "", False, "multiple subjects, none that match username"),
    ([{"kind": "User", "name": "barfoo"}, {"kind": "Group", "name": "foobar"}], Identity("zimzam", ("foobar",)), "", True, "multiple subjects, one that match group"),
    ([{"kind": "User", "name": "barfoo"}, {"kind": "Group", "name": "foobar"}], Identity("zimzam", ("foobar",)), "namespace1", True, "multiple subjects, one that match group, should ignore namespace"),
    ([{"kind": "User", "name": "barfoo"}, {"kind": "Group", "name": "foobar"}, {"kind": "ServiceAccount", "namespace": "kube-system", "name": "default"}],
     Identity("system:serviceaccount:kube-system:default"), "default", True, "multiple subjects with a service account that matches"),
    ([{"kind": "User", "name": "*"}], Identity("foobar"), "default", False, "* user subject name doesn't match all users"),
    ([{"kind": "Group", "name": "system:authenticated"}, {"kind": "Group", "name": "system:unauthenticated"}], Identity("foobar", ("system:authenticated",)), "default", True,
     "binding to all authenticated and unauthenticated subjects matches authenticated user"),
    ([{"kind": "Group", "name": "system:authenticated"}, {"kind": "Group", "name": "system:unauthenticated"}], Identity("system:anonymous", ("system:unauthenticated",)), "default", True,
     "binding to all authenticated and unauthenticated subjects matches anonymous user"),
])
def test_applies_to(subject_list, identity, namespace, expected, case):
    assert any(applies_to(identity, subject, namespace) for subject in subject_list) is expected, case


# =========================================================================== node_authorizer_test.go
def generate(nodes=2, namespaces=2, pods_per_node=2, attachments_per_node=1, slices_per_node=2):
    """``generate(opts)`` with TestNodeAuthorizer's options: per pod a unique secret, the
    shared ``secret0-shared``, a unique config map, a persistent volume (flex secret ref)
    and its claim, a resource claim, a claim template and a template-generated claim."""
    tables = {"pods": {}, "persistentvolumes": {}, "volumeattachments": {}, "resourceslices": {}, "nodes": {}}
    for n in range(nodes):
        node = f"node{n}"
        for p in range(pods_per_node):
            name, namespace = f"pod{p}-{node}", f"ns{p % namespaces}"
            pv_name = f"pv0-{name}-{namespace}"
            tables["persistentvolumes"][pv_name] = {"metadata": {"name": pv_name}, "spec": {
                "flexVolume": {"secretRef": {"name": f"secret-{pv_name}"}}, "claimRef": {"name": f"pvc0-{name}", "namespace": namespace}}}
            tables["pods"][f"{namespace}/{name}"] = {
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "nodeName": node, "serviceAccountName": f"svcacct{p}-{node}",
                    "volumes": [
                        {"secret": {"secretName": f"secret0-{name}"}},
                        {"secret": {"secretName": "secret0-shared"}},
                        {"configMap": {"name": f"configmap0-{name}"}},
                        {"persistentVolumeClaim": {"claimName": f"pvc0-{name}"}},
                    ],
                    "resourceClaims": [
                        {"name": "claim0", "resourceClaimName": f"claim0-{name}-{namespace}"},
                        {"name": "claimtemplate0", "resourceClaimTemplateName": f"claimtemplate0-{name}-{namespace}"},
                        {"name": "claimtemplate-with-claim0", "resourceClaimTemplateName": f"claimtemplate0-{name}-{namespace}"},
                    ],
                },
                "status": {"resourceClaimStatuses": [{"name": "claimtemplate-with-claim0", "resourceClaimName": f"generated-claim-{name}-{namespace}-0"}]},
            }
        for a in range(attachments_per_node):
            tables["volumeattachments"][f"attachment{a}-{node}"] = {"metadata": {"name": f"attachment{a}-{node}"}, "spec": {"nodeName": node}}
        tables["nodes"][node] = {"metadata": {"name": node}}
        for p in range(slices_per_node + 1):  # for p := 0; p <= opts.nodeResourceCapacitiesPerNode
            tables["resourceslices"][f"slice{p}-{node}"] = {"metadata": {"name": f"slice{p}-{node}"}, "nodeName": node}
    return State(tables)


NODE0 = Identity("system:node:node0", ("system:nodes",))
UNREGISTERED = Identity("system:node:nodeunregistered", ("system:nodes",))
DISABLED, ENABLED = "selector_disabled", "selector_enabled"


def r(verb, resource, name="", namespace="", group="", subresource="", fields="", user=NODE0):
    return user, Request(verb=verb, resource=resource, name=name, namespace=namespace, api_group=group, subresource=subresource, field_selector=fields)


C, RS, ST = "coordination.k8s.io", "resource.k8s.io", "storage.k8s.io"
NODE_CASES = [
    ("allowed configmap", r("get", "configmaps", "configmap0-pod0-node0", "ns0"), ALLOW, None),
    ("allowed secret via pod", r("get", "secrets", "secret0-pod0-node0", "ns0"), ALLOW, None),
    ("list allowed secret via pod", r("list", "secrets", "secret0-pod0-node0", "ns0"), ALLOW, None),
    ("watch allowed secret via pod", r("watch", "secrets", "secret0-pod0-node0", "ns0"), ALLOW, None),
    ("disallowed list many secrets", r("list", "secrets", "", "ns0"), NO, None),
    ("disallowed watch many secrets", r("watch", "secrets", "", "ns0"), NO, None),
    ("disallowed list secrets from all namespaces with name", r("list", "secrets", "secret0-pod0-node0", ""), NO, None),
    ("allowed shared secret via pod", r("get", "secrets", "secret0-shared", "ns0"), ALLOW, None),
    ("allowed shared secret via pvc", r("get", "secrets", "secret-pv0-pod0-node0-ns0", "ns0"), ALLOW, None),
    ("allowed pvc", r("get", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0"), ALLOW, None),
    ("allowed resource claim", r("get", "resourceclaims", "claim0-pod0-node0-ns0", "ns0", RS), ALLOW, None),
    ("allowed resource claim with template", r("get", "resourceclaims", "generated-claim-pod0-node0-ns0-0", "ns0", RS), ALLOW, None),
    ("allowed pv", r("get", "persistentvolumes", "pv0-pod0-node0-ns0", ""), ALLOW, None),
    ("disallowed configmap", r("get", "configmaps", "configmap0-pod0-node1", "ns0"), NO, None),
    ("disallowed secret via pod", r("get", "secrets", "secret0-pod0-node1", "ns0"), NO, None),
    ("disallowed shared secret via pvc", r("get", "secrets", "secret-pv0-pod0-node1-ns0", "ns0"), NO, None),
    ("disallowed pvc", r("get", "persistentvolumeclaims", "pvc0-pod0-node1", "ns0"), NO, None),
    ("disallowed resource claim, other node", r("get", "resourceclaims", "claim0-pod0-node1-ns0", "ns0", RS), NO, None),
    ("disallowed resource claim with template", r("get", "resourceclaims", "pod0-node1-claimtemplate0", "ns0", RS), NO, None),
    ("disallowed pv", r("get", "persistentvolumes", "pv0-pod0-node1-ns0", ""), NO, None),
    ("allowed attachment", r("get", "volumeattachments", "attachment0-node0", "", ST), ALLOW, None),
    ("allowed svcacct token create", r("create", "serviceaccounts", "svcacct0-node0", "ns0", subresource="token"), ALLOW, None),
    ("disallowed svcacct token create - serviceaccount not attached to node", r("create", "serviceaccounts", "svcacct0-node1", "ns0", subresource="token"), NO, None),
    ("disallowed svcacct token create - no subresource", r("create", "serviceaccounts", "svcacct0-node0", "ns0"), NO, None),
    ("disallowed svcacct token create - non create", r("update", "serviceaccounts", "svcacct0-node0", "ns0", subresource="token"), NO, None),
    *[(f"disallowed {verb} lease in namespace other than kube-node-lease - feature enabled", r(verb, "leases", "node0", "foo", C), NO, None) for verb in ("get", "create", "update", "patch", "delete")],
    *[(f"disallowed {verb} another node's lease - feature enabled", r(verb, "leases", "node1", "kube-node-lease", C), NO, None) for verb in ("get", "update", "patch", "delete")],
    ("disallowed list node leases - feature enabled", r("list", "leases", "", "kube-node-lease", C), NO, None),
    ("disallowed watch node leases - feature enabled", r("watch", "leases", "", "kube-node-lease", C), NO, None),
    *[(f"allowed {verb} node lease - feature enabled", r(verb, "leases", "node0", "kube-node-lease", C), ALLOW, None) for verb in ("get", "create", "update", "patch", "delete")],
    # CSINode
    ("disallowed CSINode with subresource - feature enabled", r("get", "csinodes", "node0", "", ST, subresource="csiDrivers"), NO, None),
    *[(f"disallowed {verb} another node's CSINode", r(verb, "csinodes", "node1", "", ST), NO, None) for verb in ("get", "update", "patch", "delete")],
    ("disallowed list CSINodes", r("list", "csinodes", "", "", ST), NO, None),
    ("disallowed watch CSINodes", r("watch", "csinodes", "", "", ST), NO, None),
    *[(f"allowed {verb} CSINode", r(verb, "csinodes", "node0", "", ST), ALLOW, None) for verb in ("get", "create", "update", "patch", "delete")],
    # ResourceSlice
    ("disallowed ResourceSlice with subresource", r("get", "resourceslices", "slice0-node0", "", RS, subresource="status"), NO, None),
    *[(f"disallowed {verb} another node's ResourceSlice", r(verb, "resourceslices", "slice0-node1", "", RS), NO, None) for verb in ("get", "update", "patch", "delete")],
    ("allowed filtered list ResourceSlices", r("list", "resourceslices", "", "", RS, fields="nodeName==node0"), ALLOW, None),
    ("allowed unfiltered list ResourceSlices - selector authz disabled", r("list", "resourceslices", "", "", RS), ALLOW, DISABLED),
    ("disallowed unfiltered list ResourceSlices - selector authz enabled", r("list", "resourceslices", "", "", RS), NO, ENABLED),
    ("allowed filtered watch ResourceSlices", r("watch", "resourceslices", "", "", RS, fields="nodeName==node0"), ALLOW, None),
    ("allowed unfiltered watch ResourceSlices - selector authz disabled", r("watch", "resourceslices", "", "", RS), ALLOW, DISABLED),
    ("disallowed unfiltered watch ResourceSlices - selector authz enabled", r("watch", "resourceslices", "", "", RS), NO, ENABLED),
    *[(f"allowed {verb} ResourceSlice", r(verb, "resourceslices", "slice0-node0", "", RS), ALLOW, None) for verb in ("get", "create", "update", "patch", "delete")],
    # pods: get, list, watch
    ("get related pod", r("get", "pods", "pod0-node0", "ns0"), ALLOW, None),
    ("get unrelated pod - selector disabled", r("get", "pods", "pod0-node1", "ns0"), ALLOW, DISABLED),
    ("get unrelated pod - selector enabled", r("get", "pods", "pod0-node1", "ns0"), NO, ENABLED),
    ("list related pods", r("list", "pods", fields="spec.nodeName=node0"), ALLOW, None),
    ("list related pods - alternate selector", r("list", "pods", fields="spec.nodeName==node0"), ALLOW, None),
    ("list single related pod", r("list", "pods", "pod0-node0", "ns0"), ALLOW, None),
    ("list unrelated pods - selector disabled", r("list", "pods"), ALLOW, DISABLED),
    ("list unrelated pods - selector enabled", r("list", "pods"), NO, ENABLED),
    ("watch related pods", r("watch", "pods", fields="spec.nodeName=node0"), ALLOW, None),
    ("watch related pods (==)", r("watch", "pods", fields="spec.nodeName==node0"), ALLOW, None),
    ("watch single related pod", r("watch", "pods", "pod0-node0", "ns0"), ALLOW, None),
    ("watch unrelated pods - selector disabled", r("watch", "pods"), ALLOW, DISABLED),
    ("watch unrelated pods - selector enabled", r("watch", "pods"), NO, ENABLED),
    # pods: create, delete, status, eviction
    ("create unnamed pod", r("create", "pods", "", "ns0"), ALLOW, None),
    ("create pod proxy subresource forbidden", r("create", "pods", "", "ns0", subresource="proxy"), NO, None),
    ("delete related pod", r("delete", "pods", "pod0-node0", "ns0"), ALLOW, None),
    ("delete unrelated pod", r("delete", "pods", "pod0-node1", "ns0"), ALLOW, None),  # guarded by NodeRestriction admission
    ("delete pod proxy subresource forbidden", r("delete", "pods", "pod0-node0", "ns0", subresource="proxy"), NO, None),
    ("update related pod status", r("update", "pods", "pod0-node0", "ns0", subresource="status"), ALLOW, None),
    ("update unrelated pod status", r("update", "pods", "pod0-node1", "ns0", subresource="status"), ALLOW, None),
    ("patch related pod status", r("patch", "pods", "pod0-node0", "ns0", subresource="status"), ALLOW, None),
    ("patch unrelated pod status", r("patch", "pods", "pod0-node1", "ns0", subresource="status"), ALLOW, None),
    ("get pod status", r("get", "pods", "pod0-node0", "ns0", subresource="status"), NO, None),
    ("create related pod eviction", r("create", "pods", "pod0-node0", "ns0", subresource="eviction"), ALLOW, None),
    ("create unrelated pod eviction", r("create", "pods", "pod0-node1", "ns0", subresource="eviction"), ALLOW, None),
    # nodes
    ("get related unregistered node", r("get", "nodes", "nodeunregistered", user=UNREGISTERED), ALLOW, None),
    ("get related node", r("get", "nodes", "node0"), ALLOW, None),
    ("get unrelated node - selector disabled", r("get", "nodes", "node1"), ALLOW, DISABLED),
    ("get unrelated pod - selector enabled", r("get", "nodes", "node1"), NO, ENABLED),
    ("list single related node", r("list", "nodes", "node0"), ALLOW, None),
    ("list single unrelated node - selector disabled", r("list", "nodes", "node1"), ALLOW, DISABLED),
    ("list single unrelated node - selector enabled", r("list", "nodes", "node1"), NO, ENABLED),
    ("list all nodes - selector disabled", r("list", "nodes"), ALLOW, DISABLED),
    ("list all nodes - selector enabled", r("list", "nodes"), NO, ENABLED),
    ("watch single related node", r("watch", "nodes", "node0"), ALLOW, None),
    ("watch single unrelated node - selector disabled", r("watch", "nodes", "node1"), ALLOW, DISABLED),
    ("watch single unrelated node - selector enabled", r("watch", "nodes", "node1"), NO, ENABLED),
    ("watch all nodes - selector disabled", r("watch", "nodes"), ALLOW, DISABLED),
    ("watch all nodes - selector enabled", r("watch", "nodes"), NO, ENABLED),
    ("create node", r("create", "nodes"), ALLOW, None),
    ("update related node", r("update", "nodes", "node0"), ALLOW, None),
    ("update unrelated node", r("update", "nodes", "node1"), ALLOW, None),  # guarded by NodeRestriction admission
    ("patch related node", r("patch", "nodes", "node0"), ALLOW, None),
    ("patch unrelated node", r("patch", "nodes", "node1"), ALLOW, None),
    ("update related node status", r("update", "nodes", "node0", subresource="status"), ALLOW, None),
    ("update unrelated node status", r("update", "nodes", "node1", subresource="status"), ALLOW, None),
    ("patch related node status", r("patch", "nodes", "node0", subresource="status"), ALLOW, None),
    ("patch unrelated node status", r("patch", "nodes", "node1", subresource="status"), ALLOW, None),
]
NODE_STATE = generate()


def test_every_node_authorizer_row_is_here():
    assert len(NODE_CASES) == 117


@pytest.mark.parametrize(("name", "attributes", "expected", "variant"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_node_authorizer(name, attributes, expected, variant):
    identity, request = attributes
    for suffix in ((DISABLED, ENABLED) if variant is None else (variant,)):
        allowed, why = node_authorizer(request, identity, NODE_STATE, selector_authz=suffix == ENABLED)
        assert allowed is expected, f"{name}_{suffix}: {why}"


def shared_state(pod3_volumes=True):
    def pod(name, node, secrets):
        return {"metadata": {"name": name, "namespace": "ns1"}, "spec": {"nodeName": node, "volumes": [{"secret": {"secretName": s}} for s in secrets]}}

    pods = {
        "ns1/pod1-node1": pod("pod1-node1", "node1", ["node1-only", "node1-node2-only", "shared-all"]),
        "ns1/pod2-node2": pod("pod2-node2", "node2", ["node1-node2-only", "shared-all"]),
        "ns1/pod3-node3": pod("pod3-node3", "node3", ["shared-all"] if pod3_volumes else []),
    }
    return State({"pods": pods})


def node(n):
    return Identity(f"system:node:node{n}", ("system:nodes",))


@pytest.mark.parametrize(("user", "secret", "expected"), [
    (node(1), "node1-only", ALLOW), (node(1), "node1-node2-only", ALLOW), (node(1), "shared-all", ALLOW),
    (node(2), "node1-only", NO), (node(2), "node1-node2-only", ALLOW), (node(2), "shared-all", ALLOW),
    (node(3), "node1-only", NO), (node(3), "node1-node2-only", NO), (node(3), "shared-all", ALLOW),
])
def test_node_authorizer_shared_resources(user, secret, expected):
    request = Request(verb="get", resource="secrets", namespace="ns1", name=secret)
    assert node_authorizer(request, user, shared_state())[0] is expected


def test_node_authorizer_shared_secret_goes_with_the_last_pod_that_used_it():
    request = Request(verb="get", resource="secrets", namespace="ns1", name="shared-all")
    assert node_authorizer(request, node(3), shared_state())[0] is ALLOW
    # "should trigger recalculation of the shared secret index": pod3 drops its volumes
    assert node_authorizer(request, node(3), shared_state(pod3_volumes=False))[0] is NO

"""The authorization checker on synthetic journals, and the oracle's authentication and
admission parts (the authorizers' upstream tables are in test_authz_oracle_upstream.py)."""

from __future__ import annotations

import json

import pytest

from chaoskube.checkers.authorization import check_authorization
from chaoskube.checkers.authz_oracle import Identity, Request, State, authenticate, expect, merge_patch, namespace_lifecycle, node_restriction

NODE1 = {"kind": "certificate", "common_name": "system:node:n1", "organizations": ["system:nodes"]}
ALICE = {"kind": "certificate", "common_name": "alice", "organizations": []}


def sa_token(uid=""):
    return {"kind": "service-account-token", "namespace": "t", "name": "bot", "uid": uid}


# =========================================================================== the oracle
def test_authentication_follows_the_account_and_its_uid():
    state = State({"serviceaccounts": {"t/bot": {"metadata": {"name": "bot", "namespace": "t", "uid": "u-2"}}}})
    identity, _ = authenticate(sa_token(), state)
    assert identity == Identity("system:serviceaccount:t:bot", ("system:serviceaccounts", "system:serviceaccounts:t", "system:authenticated"))
    assert authenticate(sa_token("u-2"), state)[0] is not None
    assert authenticate(sa_token("u-1"), state)[0] is None  # bound to a deleted namesake
    assert authenticate(sa_token(), State())[0] is None  # the account is gone
    assert authenticate(NODE1, State())[0] == Identity("system:node:n1", ("system:nodes", "system:authenticated"))


def nodes(*pairs):
    return {name: {"metadata": {"name": name, "labels": labels}} for name, labels in pairs}


def pods(*triples):
    return {f"{ns}/{name}": {"metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}}, "spec": {"nodeName": node}} for ns, name, node in triples}


N1 = Identity("system:node:n1", ("system:nodes", "system:authenticated"))
STATE = State({"nodes": nodes(("n1", {"kubernetes.io/hostname": "n1"}), ("n2", {})), "pods": pods(("d", "mine", "n1"), ("d", "theirs", "n2"))})


@pytest.mark.parametrize(("request_", "allowed"), [
    (Request(verb="delete", resource="pods", namespace="d", name="mine"), True),
    (Request(verb="delete", resource="pods", namespace="d", name="theirs"), False),
    (Request(verb="patch", resource="pods", subresource="status", namespace="d", name="mine", body={"status": {"phase": "Running"}}), True),
    (Request(verb="patch", resource="pods", subresource="status", namespace="d", name="theirs", body={"status": {"phase": "Running"}}), False),
    (Request(verb="patch", resource="pods", subresource="status", namespace="d", name="mine", body={"metadata": {"labels": {"app": "db"}}}), False),  # KEP-1314
    (Request(verb="create", resource="pods", subresource="eviction", namespace="d", name="theirs"), False),
    (Request(verb="create", resource="pods", namespace="d", body={"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}}), False),  # not a mirror pod
    (Request(verb="create", resource="pods", namespace="d", body={"metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"nodeName": "n1"}}), True),
    (Request(verb="patch", resource="nodes", name="n2", body={"metadata": {"labels": {"x": "y"}}}), False),
    (Request(verb="patch", resource="nodes", name="n1", body={"metadata": {"labels": {"x": "y"}}}), True),
    (Request(verb="patch", resource="nodes", name="n1", body={"metadata": {"labels": {"node-restriction.kubernetes.io/a": "y"}}}), False),
    (Request(verb="patch", resource="nodes", name="n1", body={"metadata": {"labels": {"node.kubernetes.io/pool": "y"}}}), True),
    (Request(verb="patch", resource="nodes", name="n1", body={"metadata": {"labels": {"node-role.kubernetes.io/master": ""}}}), False),
    (Request(verb="patch", resource="nodes", name="n1", body={"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}), False),
    (Request(verb="patch", resource="nodes", name="n1", body={"metadata": {"ownerReferences": [{"kind": "ConfigMap", "name": "x"}]}}), False),  # CVE-2025-5187
    (Request(verb="update", resource="leases", api_group="coordination.k8s.io", namespace="kube-node-lease", name="n2"), False),
    (Request(verb="create", resource="leases", api_group="coordination.k8s.io", namespace="kube-node-lease", body={"metadata": {"name": "n1"}}), True),
])
def test_node_restriction(request_, allowed):
    assert node_restriction(request_, N1, STATE)[0] is allowed


def test_namespace_lifecycle():
    state = State({"namespaces": {"live": {"metadata": {"name": "live"}, "status": {"phase": "Active"}},
                                  "dying": {"metadata": {"name": "dying", "deletionTimestamp": "x"}, "status": {"phase": "Terminating"}}}})
    create = lambda ns: Request(verb="create", resource="leases", api_group="coordination.k8s.io", namespace=ns)  # noqa: E731
    assert namespace_lifecycle(create("live"), state)[0]
    assert not namespace_lifecycle(create("dying"), state)[0]
    assert not namespace_lifecycle(create("gone"), state)[0]
    assert namespace_lifecycle(create("default"), state)[0]  # immortal
    assert namespace_lifecycle(Request(verb="patch", resource="leases", namespace="dying", name="x"), state)[0]  # updates go on
    assert namespace_lifecycle(Request(verb="delete", resource="leases", namespace="gone", name="x"), state)[0]


def test_merge_patch_is_rfc_7386():
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "f": [1]}) == {"a": 1, "b": {"d": 3, "e": 4}, "f": [1]}


def test_masters_and_the_node_authorizer_come_before_rbac():
    masters = {"kind": "token", "user": "root", "groups": ["system:masters"]}
    request = Request(verb="delete", resource="nodes", name="n1")
    assert expect(masters, request, State()).allowed
    assert not expect(NODE1, request, State()).allowed  # a kubelet may not delete Nodes
    assert expect(NODE1, Request(verb="get", resource="nodes", name="n2"), State()).allowed
    denied = expect(ALICE, Request(verb="list", resource="pods", namespace="d"), State())
    assert (denied.allowed, denied.stage) == (False, "authorization") and "alice" in denied.why


# =========================================================================== the checker
def apply(t, revision, *writes):
    """A raft-apply event writing (key, object or None)."""
    events = [["DELETE" if obj is None else "PUT", key, "" if obj is None else json.dumps(obj), revision] for key, obj in writes]
    return {"type": "raft-apply", "t": t, "revision": revision, "events": events, "member": "etcd-1"}


EDITOR = {"metadata": {"name": "editor"}, "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}
BINDING = {"metadata": {"name": "alice", "namespace": "b"}, "roleRef": {"kind": "ClusterRole", "name": "editor"}, "subjects": [{"kind": "User", "name": "alice"}]}


def attempt(t, code, *, verb="list", resource="pods", namespace="b", name="", invoked=None, credentials=ALICE, body=None, message="", **extra):
    return {"type": "tenant-attempt", "t": t, "invoked": t - 0.01 if invoked is None else invoked, "tenant": "rolebinding-user", "boundary": "rbac-cluster-scope",
            "action": "x", "user": credentials.get("common_name", "?"), "credentials": credentials, "verb": verb, "resource": resource, "api_group": "",
            "subresource": "", "namespace": namespace, "name": name, "field_selector": "", "body": body, "dry_run": False,
            "code": code, "server": "kube-apiserver-1", "message": message, **extra}


def journal(*more):
    return [apply(1.0, 2, ("/registry/clusterroles/editor", EDITOR), ("/registry/rolebindings/b/alice", BINDING)), *more]


def test_allowed_and_refused_as_the_policy_says():
    verdict = check_authorization(journal(
        attempt(5.0, 200),  # in her namespace
        attempt(6.0, 403, namespace="a", message='pods is forbidden: User "alice" cannot list ...'),  # elsewhere
        attempt(7.0, 403, namespace="", message='pods is forbidden: User "alice" cannot list ...'),  # cluster scope
        attempt(8.0, 500),  # not judged
    ))
    assert verdict.valid is True, verdict.reason
    assert verdict.details["judged"] == 3 and verdict.details["unjudged"] == {"500": 1}


def test_a_forbidden_success_is_a_finding_naming_the_rule():
    verdict = check_authorization(journal(attempt(5.0, 200), attempt(6.0, 200, namespace="", name="")))
    assert verdict.valid is False
    assert "forbidden action succeeded at t=6.000: alice" in verdict.reason and "RBAC: no binding grants list pods at the cluster scope to alice" in verdict.reason
    assert verdict.evidence[0]["expected"] == "deny" and verdict.evidence[0]["stage"] == "authorization"


def test_a_removed_binding_honoured_within_the_bound_is_a_window_and_beyond_it_a_finding():
    removed = apply(10.0, 3, ("/registry/rolebindings/b/alice", None))
    soon = check_authorization(journal(removed, attempt(14.0, 200)))
    assert soon.valid is True and soon.details["window_count"] == 1
    assert soon.details["windows"][0]["stale_by_s"] == pytest.approx(3.99)
    late = check_authorization(journal(removed, attempt(25.0, 200)))
    assert late.valid is False and "forbidden action succeeded" in late.reason
    assert check_authorization(journal(removed, attempt(25.0, 200)), lag_bound_s=20.0).valid is True


def test_a_request_that_straddles_the_change_is_judged_on_any_state_it_saw():
    removed = apply(10.0, 3, ("/registry/rolebindings/b/alice", None))
    verdict = check_authorization(journal(removed, attempt(30.0, 200, invoked=9.5)))  # sent before the removal
    assert verdict.valid is True and verdict.details["window_count"] == 0


def test_a_permitted_action_refused_is_a_finding_unless_the_cache_may_lag():
    refused = 'pods is forbidden: User "alice" cannot list resource "pods"'
    created = [apply(1.0, 2, ("/registry/clusterroles/editor", EDITOR)), apply(20.0, 3, ("/registry/rolebindings/b/alice", BINDING))]
    assert check_authorization([*created, attempt(22.0, 403, message=refused)]).valid is True  # just granted: a window
    verdict = check_authorization([*created, attempt(40.0, 403, message=refused)])
    assert verdict.valid is False and "permitted action refused" in verdict.reason
    webhook = check_authorization([*created, attempt(40.0, 403, message='admission webhook "deny.example.com" denied the request')])
    assert webhook.valid is True  # not a boundary the oracle models


def test_a_write_is_judged_on_the_state_before_it():
    node = {"metadata": {"name": "n1", "labels": {}}}
    labelled = {"metadata": {"name": "n1", "labels": {"node-restriction.kubernetes.io/x": "y"}}}
    events = [
        apply(1.0, 2, ("/registry/nodes/n1", node)),
        apply(5.0, 3, ("/registry/nodes/n1", labelled)),  # the attempt's own write
        attempt(5.01, 200, verb="patch", resource="nodes", namespace="", name="n1", invoked=4.99, credentials=NODE1,
                body={"metadata": {"labels": {"node-restriction.kubernetes.io/x": "y"}}}, resource_version="3"),
    ]
    verdict = check_authorization(events)
    assert verdict.valid is False and "NodeRestriction" in verdict.reason


def test_deleted_and_recreated_accounts():
    account = {"metadata": {"name": "bot", "namespace": "t", "uid": "u-1"}}
    namesake = {"metadata": {"name": "bot", "namespace": "t", "uid": "u-2"}}
    role = {"metadata": {"name": "lister", "namespace": "t"}, "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]}
    bound = {"metadata": {"name": "bot", "namespace": "t"}, "roleRef": {"kind": "Role", "name": "lister"}, "subjects": [{"kind": "ServiceAccount", "name": "bot"}]}
    events = [
        apply(1.0, 2, ("/registry/serviceaccounts/t/bot", account), ("/registry/roles/t/lister", role), ("/registry/rolebindings/t/bot", bound)),
        apply(10.0, 3, ("/registry/serviceaccounts/t/bot", None)),
        apply(20.0, 4, ("/registry/serviceaccounts/t/bot", namesake)),
    ]
    fine = [attempt(5.0, 200, namespace="t", credentials=sa_token("u-1")), attempt(15.0, 401, namespace="t", credentials=sa_token("u-1")),
            attempt(45.0, 401, namespace="t", credentials=sa_token("u-1")), attempt(45.0, 200, namespace="t", credentials=sa_token())]
    assert check_authorization([*events, *fine]).valid is True
    verdict = check_authorization([*events, attempt(45.0, 200, namespace="t", credentials=sa_token("u-1"))])
    assert verdict.valid is False and verdict.evidence[0]["stage"] == "authentication"


def test_unknown_without_attempts_or_store():
    assert check_authorization(journal()).valid is None
    assert check_authorization([attempt(1.0, 200)]).valid is None

"""The adversarial tenants' data: their objects are valid API objects, their options are
checked, every action is named once, and the oracle agrees with each tenant's declared
intent on a freshly set-up policy (before any revocation)."""

from __future__ import annotations

import pytest

from chaoskube.api.manifests import to_dict
from chaoskube.checkers.authz_oracle import Request, State, expect
from chaoskube.tenants import ACTIONS, ALL_TENANTS, BOUNDARIES, TenantSpec, TenantState, setup_objects


def test_setup_objects_and_boundaries():
    objects = setup_objects()
    kinds = [obj.KIND for obj in objects]
    assert kinds.count("Namespace") == 4 and "RoleBinding" in kinds and "ClusterRole" in kinds
    assert set(BOUNDARIES) == set(ALL_TENANTS) == set(ACTIONS)


def test_spec_validation():
    with pytest.raises(ValueError, match="every_s"):
        TenantSpec(every_s=0)
    with pytest.raises(ValueError, match="revoke_after_s"):
        TenantSpec(revoke_after_s=50, restore_after_s=10)
    with pytest.raises(ValueError, match="unknown tenant"):
        TenantSpec(tenants=("root",))


@pytest.mark.parametrize("tenant", ALL_TENANTS)
def test_action_names_are_unique(tenant):
    names = [name for name, _ in ACTIONS[tenant]()]
    assert len(names) == len(set(names))


def _state():
    tables: dict = {"nodes": {}, "pods": {}}
    for obj in setup_objects():
        data = to_dict(obj)
        resource = obj.RESOURCE
        key = f"{obj.metadata.namespace}/{obj.metadata.name}" if obj.metadata.namespace else obj.metadata.name
        data.setdefault("metadata", {})["uid"] = f"uid-{key}"
        tables.setdefault(resource, {})[key] = data
    for name in ("n1", "n2"):
        tables["nodes"][name] = {"metadata": {"name": name, "labels": {}}, "spec": {}}
    tables["pods"]["default/mine"] = {"metadata": {"name": "mine", "namespace": "default", "labels": {"app": "web"}}, "spec": {"nodeName": "n1"}}
    tables["pods"]["default/theirs"] = {"metadata": {"name": "theirs", "namespace": "default", "labels": {"app": "web"}}, "spec": {"nodeName": "n2"}}
    for name in ("kube-scheduler",):
        tables.setdefault("leases", {})[f"kube-system/{name}"] = {"metadata": {"name": name}}
    # the bootstrap policy (cluster-admin) matters to no tenant here
    return State(tables)


def _credentials(tenant, action, state):
    if tenant == "kubelet":
        return {"kind": "certificate", "common_name": "system:node:n1", "organizations": ["system:nodes"]}
    if tenant == "rolebinding-user":
        return {"kind": "certificate", "common_name": "alice", "organizations": ["tenant-devs"]}
    if tenant == "terminating-namespace":
        return {"kind": "certificate", "common_name": "bob", "organizations": []}
    namespace, name = ("tenant-a", "app") if tenant == "service-account" else ("tenant-c", "ephemeral")
    uid = "" if action.endswith("legacy-token") else f"uid-{namespace}/{name}"
    return {"kind": "service-account-token", "namespace": namespace, "name": name, "uid": uid}


@pytest.mark.parametrize("tenant", ALL_TENANTS)
def test_the_oracle_agrees_with_every_declared_intent(tenant):
    state = _state()
    tenant_state = TenantState(node="n1", other_node="n2", pods=[("default", "mine", "n1"), ("default", "theirs", "n2")])
    for name, build in ACTIONS[tenant]():
        planned = build(tenant_state)
        if planned is None:
            continue
        request = Request(verb=planned.verb, resource=planned.resource, subresource=planned.subresource, namespace=planned.namespace,
                          name=planned.name if not (planned.verb == "create" and not planned.subresource) else "",
                          api_group={"leases": "coordination.k8s.io", "roles": "rbac.authorization.k8s.io", "rolebindings": "rbac.authorization.k8s.io",
                                     "clusterrolebindings": "rbac.authorization.k8s.io"}.get(planned.resource, ""),
                          field_selector=planned.field_selector, body=planned.body)
        verdict = expect(_credentials(tenant, name, state), request, state)
        assert verdict.allowed == (planned.intent == "allowed"), (tenant, name, verdict)

"""ClusterMachine's adversarial-tenant rules (issue 19): a recorded story of tenant attempts
under the real components passes the authorization invariant and replays to the same
fingerprint; under a broken NodeRestriction the same story fails that invariant, naming the
forbidden action that succeeded."""

from __future__ import annotations

import pytest

from chaoskube import gallery
from chaoskube.testing import ClusterMachine, InvariantViolation

STORY = [
    ("boot", {"seed": 3}),
    ("create_deployment", {"name": "web", "replicas": 3}),
    ("wait", {"seconds": 30.0}),
    ("start_tenants", {}),
    ("tenant_attempt", {"tenant": "kubelet", "action": 1}),  # list-pods: learns the other nodes' pods
    ("tenant_attempt", {"tenant": "kubelet", "action": 4}),  # patch-other-pod-status
    ("tenant_attempt", {"tenant": "rolebinding-user", "action": 6}),
    ("tenant_revoke", {}),
    ("wait", {"seconds": 15.0}),
    ("tenant_attempt", {"tenant": "deleted-service-account", "action": 0}),
    ("tenant_restore", {}),
    ("wait", {"seconds": 15.0}),
    ("tenant_attempt", {"tenant": "deleted-service-account", "action": 0}),
]


def test_the_tenant_story_holds_and_replays_exactly():
    first = ClusterMachine.replay(STORY)
    again = ClusterMachine.replay(STORY)
    assert first.fingerprint == again.fingerprint
    assert [name for name, _ in first.steps][:4] == ["boot", "create_deployment", "wait", "start_tenants"]


def test_a_broken_node_restriction_fails_the_authorization_invariant():
    with gallery.applied(["noderestriction-any-pod"]), pytest.raises(InvariantViolation) as caught:
        ClusterMachine.replay(STORY)
    assert caught.value.name == "authorization"
    assert "patch-other-pod-status" in str(caught.value) and "NodeRestriction" in str(caught.value)

"""The API server through its front door: each test a short story on a simulated cluster
(3 etcd members, API server replicas, a test process sending raw requests)."""

import pytest
import trio

from chaoskube.api.identity import node_credentials, service_account_credentials, user_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.protocol import Binding, DeleteOptions, Eviction, parse_timestamp
from chaoskube.apiserver.server import ApiServer, ApiServerConfig, pod_cap
from chaoskube.apiserver.storage import copy_object
from chaoskube.etcd.client import EtcdClient
from chaoskube.etcd.requests import RangeRequest
from chaoskube.etcd.server import EtcdConfig
from tests.apiserver.apiserver_harness import run_api


def pod(name, labels=None, node="", namespace="default", **spec):
    return from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **({"nodeName": node} if node else {}), **spec},
    })


def obj(manifest):
    return from_dict(manifest)


def pdb(name, selector, min_available=None, max_unavailable=None):
    spec = {"selector": {"matchLabels": selector}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return obj({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"}, "spec": spec})


# ----------------------------------------------------------------------------- storage and CRUD
def test_bootstrap_creates_system_namespaces_and_rbac_and_objects_live_under_registry():
    async def story(world, api, registry):
        names = [item.metadata.name for item in (await api("list", "namespaces")).items]
        created = await api("create", "pods", namespace="default", body=pod("web"))
        etcd = EtcdClient(api.process, ["etcd-1", "etcd-2", "etcd-3"])
        raw = await etcd.request(RangeRequest("/registry/pods/default/web"), idempotent=True)
        return names, created, raw.reply.response.kvs[0]

    _, (names, created, kv) = run_api(story)
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    assert created.code == 201
    meta = created.object.metadata
    assert meta.uid and meta.creation_timestamp and meta.resource_version == str(kv.mod_revision)
    assert '"resourceVersion"' not in kv.value  # the version is etcd's mod_revision, never stored
    assert '"uid":"%s"' % meta.uid in kv.value
    assert created.object.status.phase == "Pending"


def test_create_get_list_and_already_exists():
    async def story(world, api, registry):
        first = await api("create", "pods", namespace="default", body=pod("web", {"app": "web"}))
        again = await api("create", "pods", namespace="default", body=pod("web"))
        await api("create", "pods", namespace="default", body=pod("db", {"app": "db"}, node="n1"))
        got = await api("get", "pods", namespace="default", name="web")
        missing = await api("get", "pods", namespace="default", name="nope")
        by_label = await api("list", "pods", namespace="default", label_selector="app in (web, cache)")
        by_field = await api("list", "pods", namespace="default", field_selector="spec.nodeName=n1")
        bad = await api("list", "pods", namespace="default", field_selector="spec.color=red")
        generated = await api("create", "pods", namespace="default", body=from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}))
        return first, again, got, missing, by_label, by_field, bad, generated

    _, (first, again, got, missing, by_label, by_field, bad, generated) = run_api(story)
    assert (again.code, again.status.reason, again.status.message) == (409, "AlreadyExists", 'pods "web" already exists')
    assert got.object == first.object
    assert (missing.code, missing.status.message) == (404, 'pods "nope" not found')
    assert [p.metadata.name for p in by_label.items] == ["web"]
    assert [p.metadata.name for p in by_field.items] == ["db"]
    assert bad.code == 400
    assert generated.object.metadata.name.startswith("web-") and len(generated.object.metadata.name) == 9


def test_a_stale_update_gets_409_and_an_unconditional_one_goes_through():
    async def story(world, api, registry):
        created = (await api("create", "pods", namespace="default", body=pod("web"))).object

        def labelled(value, resource_version):  # get, modify, put: as clients update
            changed = copy_object(created)
            changed.metadata.labels = {"v": value}
            changed.metadata.resource_version = resource_version
            return changed

        first = await api("update", "pods", namespace="default", name="web", body=labelled("1", created.metadata.resource_version))
        second = await api("update", "pods", namespace="default", name="web", body=labelled("2", created.metadata.resource_version))
        blind = await api("update", "pods", namespace="default", name="web", body=labelled("3", ""))
        return created, first, second, blind

    _, (created, first, second, blind) = run_api(story)
    assert first.code == 200 and int(first.object.metadata.resource_version) > int(created.metadata.resource_version)
    assert first.object.metadata.uid == created.metadata.uid  # system fields are kept
    assert (second.code, second.status.reason) == (409, "Conflict")
    assert second.status.message == 'Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again'
    assert blind.code == 200 and blind.object.metadata.labels == {"v": "3"}


def test_concurrent_merge_patches_are_all_applied():
    async def story(world, api, registry):
        await api("create", "pods", namespace="default", body=pod("web"))
        async with trio.open_nursery() as nursery:
            for index in range(5):
                nursery.start_soon(lambda i=index: api("patch", "pods", namespace="default", name="web", body={"metadata": {"labels": {f"k{i}": "v"}}}))
        return await api("get", "pods", namespace="default", name="web")

    _, got = run_api(story, servers=2)
    assert got.object.metadata.labels == {f"k{i}": "v" for i in range(5)}


def test_status_subresource_and_generation():
    async def story(world, api, registry):
        budget = (await api("create", "poddisruptionbudgets", namespace="default", body=pdb("budget", {"app": "web"}, min_available=1))).object
        budget.status.disruptions_allowed = 5
        main = await api("update", "poddisruptionbudgets", namespace="default", name="budget", body=budget)
        status = await api("patch", "poddisruptionbudgets", namespace="default", name="budget", subresource="status", body={"status": {"disruptionsAllowed": 2}, "spec": {"minAvailable": 9}})
        spec = await api("patch", "poddisruptionbudgets", namespace="default", name="budget", body={"spec": {"minAvailable": 2}})
        return budget, main, status, spec

    _, (budget, main, status, spec) = run_api(story)
    assert budget.metadata.generation == 1
    assert main.object.status.disruptions_allowed == 0  # the main resource ignores status
    assert status.object.status.disruptions_allowed == 2 and status.object.spec.min_available == 1  # status ignores spec
    assert spec.object.metadata.generation == 2 and spec.object.status.disruptions_allowed == 2


def test_validation_is_422_with_field_paths():
    async def story(world, api, registry):
        no_containers = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": []}})
        both = pdb("both", {"app": "web"}, min_available=1, max_unavailable=1)
        return await api("create", "pods", namespace="default", body=no_containers), await api("create", "poddisruptionbudgets", namespace="default", body=both)

    _, (pod_answer, pdb_answer) = run_api(story)
    assert (pod_answer.code, pod_answer.status.reason) == (422, "Invalid")
    assert pod_answer.status.message == 'Pod "x" is invalid: spec.containers: Required value'
    assert "minAvailable and maxUnavailable cannot be both set" in pdb_answer.status.message


# ----------------------------------------------------------------------------- authn and authz
def test_rbac_denies_then_a_role_binding_grants():
    async def story(world, api, registry):
        alice = api.as_(user_credentials("alice", ["dev"]))
        denied = await alice("list", "pods", namespace="default")
        stranger = await api.as_(user_credentials("", ())).__call__("list", "pods", namespace="default")
        await api("create", "roles", namespace="default", body=obj({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}))
        await api("create", "rolebindings", namespace="default", body=obj({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "devs-read"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}, "subjects": [{"kind": "Group", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}]}))
        granted = await alice.eventually("list", "pods", lambda r: r.code == 200, namespace="default")
        still_denied = await alice("create", "pods", namespace="default", body=pod("web"))
        elsewhere = await alice("list", "pods", namespace="kube-system")
        return denied, stranger, granted, still_denied, elsewhere

    _, (denied, stranger, granted, still_denied, elsewhere) = run_api(story)
    assert (denied.code, denied.status.reason) == (403, "Forbidden")
    assert denied.status.message.startswith('pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"')
    assert (stranger.code, stranger.status.message) == (401, "Unauthorized")
    assert granted.code == 200
    assert still_denied.code == 403 and elsewhere.code == 403


def test_service_account_tokens_die_with_the_account():
    async def story(world, api, registry):
        bot = api.as_(service_account_credentials("default", "bot"))
        before = await bot("get", "namespaces", name="default")
        await api("create", "serviceaccounts", namespace="default", body=obj({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}))
        after = await bot.eventually("get", "namespaces", lambda r: r.code != 401, name="default")
        return before, after

    _, (before, after) = run_api(story)
    assert before.code == 401
    assert after.code == 403 and 'User "system:serviceaccount:default:bot"' in after.status.message


def test_a_bound_token_dies_with_its_account_and_does_not_return_with_a_namesake():
    """A token bound to the account's uid (KEP-1205) is refused once the account is gone,
    and stays refused when an account of the same name is created again (a new uid):
    ``pkg/serviceaccount/claims.go``, kubernetes/kubernetes#62993. A legacy token (no uid)
    works for the namesake."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}

    async def story(world, api, registry):
        created = await api("create", "serviceaccounts", namespace="default", body=obj(account))
        bound = api.as_(service_account_credentials("default", "bot", created.object.metadata.uid))
        legacy = api.as_(service_account_credentials("default", "bot"))
        alive = await bound.eventually("get", "namespaces", lambda r: r.code != 401, name="default")
        await api("delete", "serviceaccounts", namespace="default", name="bot")
        gone = await bound.eventually("get", "namespaces", lambda r: r.code == 401, name="default")
        await api("create", "serviceaccounts", namespace="default", body=obj(account))
        namesake = await legacy.eventually("get", "namespaces", lambda r: r.code != 401, name="default")
        still_gone = await bound("get", "namespaces", name="default")
        return alive, gone, namesake, still_gone

    _, (alive, gone, namesake, still_gone) = run_api(story)
    assert alive.code == 403 and gone.code == 401
    assert namesake.code == 403 and still_gone.code == 401


def test_node_authorizer_and_node_restriction_keep_a_kubelet_to_its_own():
    async def story(world, api, registry):
        for name in ("n1", "n2"):
            await api("create", "nodes", body=obj({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}))
        await api("create", "pods", namespace="default", body=pod("mine", node="n1"))
        await api("create", "pods", namespace="default", body=pod("theirs", node="n2"))
        kubelet = api.as_(node_credentials("n1"))
        own_node = await kubelet.eventually("get", "nodes", lambda r: r.code == 200, name="n1")
        own_pod = await kubelet.eventually("get", "pods", lambda r: r.code == 200, namespace="default", name="mine")
        other_pod = await kubelet("delete", "pods", namespace="default", name="theirs")
        other_node_label = await kubelet("patch", "nodes", name="n2", body={"metadata": {"labels": {"x": "y"}}})
        status = await kubelet("patch", "pods", namespace="default", name="mine", subresource="status", body={"status": {"phase": "Running"}})
        return own_node, own_pod, other_pod, other_node_label, status

    _, (own_node, own_pod, other_pod, other_node_label, status) = run_api(story)
    assert own_node.code == 200 and own_pod.code == 200
    # the Node authorizer lets it through (as upstream); NodeRestriction admission refuses
    assert other_pod.code == 403 and 'node "n1" can only delete pods with spec.nodeName set to itself' in other_pod.status.message
    assert other_node_label.code == 403 and 'node "n1" is not allowed to modify node "n2"' in other_node_label.status.message
    assert status.code == 200 and status.object.status.phase == "Running"


# ----------------------------------------------------------------------------- admission
def test_built_in_admission_defaults_and_namespace_lifecycle():
    async def story(world, api, registry):
        created = await api("create", "pods", namespace="default", body=pod("web"))
        nowhere = await api("create", "pods", namespace="nope", body=pod("web", namespace="nope"))
        return created, nowhere

    _, (created, nowhere) = run_api(story)
    spec = created.object.spec
    assert spec.termination_grace_period_seconds == 30 and spec.restart_policy == "Always"
    assert {t.key for t in spec.tolerations} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert all(t.toleration_seconds == 300 for t in spec.tolerations)
    assert nowhere.code == 404 and nowhere.status.message == 'namespaces "nope" not found'


def test_admission_sees_a_namespace_created_after_a_refusal():
    """The server keeps its built-in plugins between requests (ApiServer._plugins): a
    namespace created after a refusal is seen by the next request."""
    async def story(world, api, registry):
        before = await api("create", "pods", namespace="late", body=pod("web", namespace="late"))
        await api("create", "namespaces", body=obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}}))
        await world.sleep(1.0)
        no_account = await api("create", "pods", namespace="late", body=pod("web", namespace="late"))
        await api("create", "serviceaccounts", namespace="late", body=obj({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "late"}}))
        await world.sleep(1.0)
        after = await api("create", "pods", namespace="late", body=pod("web", namespace="late"))
        return before, no_account, after

    _, (before, no_account, after) = run_api(story)
    assert before.code == 404 and no_account.code == 403 and after.code == 201


# ----------------------------------------------------------------------------- deletion
def test_graceful_pod_deletion_and_finalizers():
    async def story(world, api, registry):
        await api("create", "pods", namespace="default", body=pod("web", node="n1"))
        first = await api("delete", "pods", namespace="default", name="web")
        at = api.process.now()
        still = await api("get", "pods", namespace="default", name="web")
        final = await api("delete", "pods", namespace="default", name="web", delete_options=DeleteOptions(grace_period_seconds=0))
        gone = await api("get", "pods", namespace="default", name="web")
        unscheduled = await api("create", "pods", namespace="default", body=pod("pending"))
        at_once = await api("delete", "pods", namespace="default", name="pending")
        held = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "finalizers": ["example.com/cleanup"]}, "spec": {"ports": [{"port": 80}]}})
        await api("create", "services", namespace="default", body=held)
        pending = await api("delete", "services", namespace="default", name="svc")
        kept = await api("get", "services", namespace="default", name="svc")
        released = await api("patch", "services", namespace="default", name="svc", body={"metadata": {"finalizers": None}})
        after = await api("get", "services", namespace="default", name="svc")
        return first, at, still, final, gone, unscheduled, at_once, pending, kept, released, after

    _, (first, at, still, final, gone, unscheduled, at_once, pending, kept, released, after) = run_api(story)
    assert first.code == 200 and first.object.metadata.deletion_grace_period_seconds == 30
    assert parse_timestamp(first.object.metadata.deletion_timestamp) == pytest.approx(at + 30, abs=1.0)
    assert still.code == 200 and still.object.metadata.deletion_timestamp
    assert final.code == 200 and gone.code == 404
    assert at_once.code == 200
    assert pending.code == 200 and pending.object.metadata.deletion_timestamp
    assert kept.code == 200 and kept.object.metadata.finalizers == ["example.com/cleanup"]
    assert released.code == 200 and after.code == 404


# ----------------------------------------------------------------------------- binding and eviction
def test_binding_assigns_once():
    async def story(world, api, registry):
        await api("create", "pods", namespace="default", body=pod("web"))
        scheduler = api.as_(user_credentials("system:kube-scheduler"))
        first = await scheduler("create", "pods", namespace="default", name="web", subresource="binding", body=Binding(name="web", namespace="default", target_node="n1"))
        second = await scheduler("create", "pods", namespace="default", name="web", subresource="binding", body=Binding(name="web", namespace="default", target_node="n2"))
        return first, second

    _, (first, second) = run_api(story)
    assert first.code == 201 and first.object.spec.node_name == "n1"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in first.object.status.conditions)
    assert second.code == 409 and second.status.message == 'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "n1"'


async def running_pods(api, count, labels):
    for index in range(count):
        await api("create", "pods", namespace="default", body=pod(f"web-{index}", labels, node="n1"))
        await api("patch", "pods", namespace="default", name=f"web-{index}", subresource="status", body={"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})


async def budget_with(api, allowed, healthy, desired):
    created = (await api("create", "poddisruptionbudgets", namespace="default", body=pdb("budget", {"app": "web"}, min_available=desired))).object
    status = {"observedGeneration": created.metadata.generation, "disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": healthy}
    await api("patch", "poddisruptionbudgets", namespace="default", name="budget", subresource="status", body={"status": status})


def test_eviction_is_refused_with_429_when_the_budget_allows_nothing():
    async def story(world, api, registry):
        await running_pods(api, 2, {"app": "web"})
        await budget_with(api, allowed=0, healthy=2, desired=2)
        refused = await api("create", "pods", namespace="default", name="web-0", subresource="eviction", body=Eviction(name="web-0", namespace="default"))
        still = await api("get", "pods", namespace="default", name="web-0")
        return refused, still

    _, (refused, still) = run_api(story)
    assert (refused.code, refused.status.reason) == (429, "TooManyRequests")
    assert refused.status.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert refused.status.causes == ("The disruption budget budget needs 2 healthy pods and has 2 currently",)
    assert still.code == 200 and still.object.metadata.deletion_timestamp is None


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_two_concurrent_evictions_never_both_spend_the_last_disruption(seed):
    async def story(world, api, registry):
        await running_pods(api, 3, {"app": "web"})
        await budget_with(api, allowed=1, healthy=3, desired=2)
        answers = {}

        async def evict(name, server):
            answers[name] = await api("create", "pods", namespace="default", name=name, subresource="eviction", body=Eviction(name=name, namespace="default"), server=server)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(evict, "web-0", "kube-apiserver-1")
            nursery.start_soon(evict, "web-1", "kube-apiserver-2")
        budget = (await api("get", "poddisruptionbudgets", namespace="default", name="budget")).object
        return answers, budget

    world, (answers, budget) = run_api(story, seed=seed, servers=2)
    codes = sorted(answer.code for answer in answers.values())
    assert codes == [201, 429], answers
    evicted = next(name for name, answer in answers.items() if answer.code == 201)
    assert budget.status.disruptions_allowed == 0
    assert list(budget.status.disrupted_pods) == [evicted]
    assert any(c.type == "DisruptionAllowed" and c.status == "False" for c in budget.status.conditions)


def test_eviction_without_a_budget_deletes_gracefully_and_a_pending_pod_goes_directly():
    async def story(world, api, registry):
        await running_pods(api, 1, {"app": "other"})
        evicted = await api("create", "pods", namespace="default", name="web-0", subresource="eviction", body=Eviction(name="web-0", namespace="default"))
        after = await api("get", "pods", namespace="default", name="web-0")
        return evicted, after

    _, (evicted, after) = run_api(story)
    assert evicted.code == 201
    assert after.object.metadata.deletion_timestamp is not None  # graceful: the kubelet finishes it


# ----------------------------------------------------------------------------- resilience
def test_a_killed_api_server_is_not_needed_by_the_others():
    async def story(world, api, registry):
        await api("create", "pods", namespace="default", body=pod("web"))
        world.process("kube-apiserver-1").kill()
        got = await api("get", "pods", namespace="default", name="web", server="kube-apiserver-2")
        created = await api("create", "pods", namespace="default", body=pod("db"), server="kube-apiserver-2")
        return got, created

    _, (got, created) = run_api(story, servers=2)
    assert got.code == 200 and created.code == 201


def test_runs_replay_byte_for_byte():
    async def story(world, api, registry):
        for index in range(3):
            await api("create", "pods", namespace="default", body=pod(f"p{index}"))
        return None

    first, _ = run_api(story, seed=11, servers=2)
    second, _ = run_api(story, seed=11, servers=2)
    assert first.fingerprint == second.fingerprint


def test_namespaces_the_system_needs_cannot_be_deleted_and_others_finalize():
    async def story(world, api, registry):
        immortal = await api("delete", "namespaces", name="kube-system")
        await api("create", "namespaces", body=obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
        terminating = await api("delete", "namespaces", name="team")
        refused = await api.eventually("create", "serviceaccounts", lambda r: r.code == 403, namespace="team", body=obj({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}}))
        finalized = await api("update", "namespaces", name="team", subresource="finalize", body=obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}, "spec": {"finalizers": []}}))
        gone = await api("get", "namespaces", name="team")
        return immortal, terminating, refused, finalized, gone

    _, (immortal, terminating, refused, finalized, gone) = run_api(story)
    assert immortal.code == 403 and immortal.status.message == 'namespaces "kube-system" is forbidden: this namespace may not be deleted'
    assert terminating.code == 200 and terminating.object.status.phase == "Terminating"
    assert "because it is being terminated" in refused.status.message
    assert finalized.code == 200 and gone.code == 404


def test_a_kubelet_may_evict_the_pods_bound_to_its_node_only():
    async def story(world, api, registry):
        await running_pods(api, 1, {"app": "web"})  # web-0 on n1
        await api("create", "pods", namespace="default", body=pod("elsewhere", node="n2"))
        await api("patch", "pods", namespace="default", name="elsewhere", subresource="status", body={"status": {"phase": "Running"}})
        kubelet = api.as_(node_credentials("n1"))
        own = await kubelet.eventually("create", "pods", lambda r: r.code != 403, namespace="default", name="web-0", subresource="eviction", body=Eviction(name="web-0", namespace="default"))
        other = await kubelet("create", "pods", namespace="default", name="elsewhere", subresource="eviction", body=Eviction(name="elsewhere", namespace="default"))
        return own, other

    _, (own, other) = run_api(story)
    assert own.code == 201
    assert other.code == 403


def test_propagation_policies_leave_the_garbage_collectors_finalizers():
    """``deletionFinalizersForGarbageCollection``: Orphan adds ``orphan``, Foreground
    ``foregroundDeletion`` (dropping the other), Background drops both; the object waits,
    marked with grace 0, until its finalizers go; an unknown policy is 422."""
    from chaoskube.apiserver.server import deletion_finalizers

    assert deletion_finalizers(["a"], "Orphan") == ["a", "orphan"]
    assert deletion_finalizers(["orphan"], "Foreground") == ["foregroundDeletion"]
    assert deletion_finalizers(["orphan", "a"], "Background") == ["a"]
    assert deletion_finalizers(["orphan"], "") == ["orphan"]

    def service(name: str):
        return obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}})

    async def story(world, api, registry):
        answers = {}
        for name, policy in (("orphan", "Orphan"), ("fg", "Foreground"), ("bg", "Background")):
            await api("create", "services", namespace="default", body=service(name))
            answers[name] = await api("delete", "services", namespace="default", name=name, delete_options=DeleteOptions(propagation_policy=policy))
            answers[f"{name}-after"] = await api("get", "services", namespace="default", name=name)
        await api("create", "services", namespace="default", body=service("bad"))
        answers["bad"] = await api("delete", "services", namespace="default", name="bad", delete_options=DeleteOptions(propagation_policy="Sometimes"))
        answers["switch"] = await api("delete", "services", namespace="default", name="orphan", delete_options=DeleteOptions(propagation_policy="Foreground"))
        answers["release"] = await api("patch", "services", namespace="default", name="orphan", body={"metadata": {"finalizers": None}})
        answers["gone"] = await api("get", "services", namespace="default", name="orphan")
        return answers

    _, answers = run_api(story)
    orphaning = answers["orphan-after"].object.metadata
    assert orphaning.finalizers == ["orphan"] and orphaning.deletion_timestamp and orphaning.deletion_grace_period_seconds == 0
    assert answers["fg-after"].object.metadata.finalizers == ["foregroundDeletion"]
    assert answers["bg-after"].code == 404
    assert answers["bad"].code == 422 and "propagationPolicy" in answers["bad"].status.message
    assert answers["switch"].object.metadata.finalizers == ["foregroundDeletion"]
    assert answers["release"].code == 200 and answers["gone"].code == 404


def test_pods_past_the_cap_are_forbidden_and_the_cap_grows_with_the_nodes():
    """The simulation's own bound (docs/api-server.md, the simulation's limits): at least
    5,000 pods, as many as the nodes' ``maxPods`` add up to, at most Kubernetes' 150,000."""
    assert [pod_cap(capacity) for capacity in (330, 5_500, 110_000, 1_100_000)] == [5_000, 5_500, 110_000, 150_000]

    async def story(world, api, registry):
        return [await api("create", "pods", namespace="default", body=pod(name)) for name in ("a", "b", "c")]

    config = ApiServerConfig(etcd_endpoints=tuple(EtcdConfig().names), max_pods=2)
    _, answers = run_api(story, config=config)
    assert [answer.code for answer in answers] == [201, 201, 403]
    assert answers[2].status.message == 'pods "c" is forbidden: the simulation holds at most 2 pods (chaoskube\'s cap per run; see docs/api-server.md)'


def test_a_create_right_after_its_namespace_finds_it_live_when_the_cache_lags(monkeypatch):
    """NamespaceLifecycle's last resorts (upstream ``lifecycle/admission.go``): a create in a
    namespace the server's cache does not hold yet waits ``missingNamespaceWait`` and then
    reads the namespace from storage, so `kubectl create ns x && kubectl create -n x ...`
    against another API server is not refused; a namespace that does not exist still is."""
    async def story(world, api, registry):
        registry["kube-apiserver-2"].cacher.stall()  # its cache behind: it will not see the namespace come
        await api("create", "namespaces", body=obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}), server="kube-apiserver-1")
        right_after = await api("create", "configmaps", namespace="fresh", body=obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "fresh"}}), server="kube-apiserver-2")
        nowhere = await api("create", "configmaps", namespace="nope", body=obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "nope"}}), server="kube-apiserver-2")
        return right_after, nowhere

    _, (right_after, nowhere) = run_api(story, servers=2)
    assert right_after.code == 201, right_after.status
    assert nowhere.code == 404 and nowhere.status.message == 'namespaces "nope" not found'

    async def cache_only(self, admission):  # the server before: its cache alone decides
        return None

    monkeypatch.setattr(ApiServer, "_namespace_seen", cache_only)
    _, (refused, _) = run_api(story, servers=2)
    assert refused.code == 404, "the test opens the window: the second server's cache has not seen the namespace"

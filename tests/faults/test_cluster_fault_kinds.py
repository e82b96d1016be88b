"""The fault kinds that act on components inside a Kubernetes cluster: ``kubelet-stop``,
``drain`` and the webhook faults (``webhook-error``, ``webhook-delay`` on both sides of
the timeout), each in a small simulated cluster; and their idempotent healing, alone and
overlapping other faults, on bare processes."""

from __future__ import annotations

import types

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.apiserver.webhooks import SERVER_FAULT_KEY
from chaoskube.checkers.eviction import check_pdb_eviction
from chaoskube.client.client import ApiError
from chaoskube.cluster import WebhookSpec
from chaoskube.experiments.systems.kubernetes import KubectlAdmin
from chaoskube.faults import Context, FaultError, FaultInjector, ProcessInfo, ScheduledFault
from chaoskube.node.kubelet import KUBELET_SWITCH_KEY
from chaoskube.node.runtime import TRAFFIC_PORT, TrafficRequest
from chaoskube.sim import World
from chaoskube.sim.outcomes import Ok
from tests.cluster import harness


def context_of(world, cluster=None, admin=None):
    def build():
        infos = [ProcessInfo(p.name, p.role, p.zone) for p in world.processes.values()]
        leader = (lambda role: cluster.leader(role) if role.startswith("kube-") else None) if cluster else (lambda role: None)
        return Context(infos, leader, admin)

    return build


async def until(world, predicate, within_s, every_s=1.0):
    deadline = world.now + within_s
    while world.now < deadline:
        if await predicate():
            return True
        await world.sleep(every_s)
    return await predicate()


async def node_ready(client, name):
    """The node's Ready condition status ("True", "Unknown", ...), or None when unreadable."""
    try:
        node = await client.get("nodes", "", name)
    except ApiError:
        return None
    return next((c.status for c in node.status.conditions if c.type == "Ready"), None)


def container_ids(pod):
    return sorted(status.container_id for status in pod.status.container_statuses)


# =========================================================================== kubelet-stop
def test_kubelet_stop_turns_the_node_unknown_while_its_pods_keep_answering_and_heal_readopts_them():
    async def story(world, cluster, client):
        await client.create(harness.deployment("web", 3))
        assert await until(world, lambda: _all_ready(client, "web", 3), 60)
        pod = min(await harness.pods_of(client, "web"), key=lambda p: p.metadata.name)
        node = pod.spec.node_name
        before = container_ids(pod)
        injector = FaultInjector(world, context_of(world, cluster))
        active = injector.inject("kubelet-stop", f"name:{node}")
        assert active is not None and active.plan.targets == (node,)
        assert world.process(node).running, "the machine stays up"
        stopped_at = world.now
        # within the 40 s grace the node still reads Ready; after it, Unknown
        await world.sleep(20)
        assert await node_ready(client, node) == "True"
        assert await until(world, lambda: _ready_is(client, node, "Unknown"), 40)
        unknown_after = world.now - stopped_at
        # the pod's containers still answer traffic on the machine
        answer = await client.process.call(node, TrafficRequest(pod.status.pod_ip, 80), port=TRAFFIC_PORT, timeout_s=1.0)
        assert isinstance(answer, Ok) and answer.value["pod"] == f"default/{pod.metadata.name}", answer
        injector.heal(active)
        injector.heal(active)  # idempotent
        assert await until(world, lambda: _ready_is(client, node, "True"), 30)
        assert await until(world, lambda: _all_ready(client, "web", 3), 60)
        after = next(p for p in await harness.pods_of(client, "web") if p.metadata.uid == pod.metadata.uid)
        return node, before, container_ids(after), unknown_after

    world, (node, before, after, unknown_after) = harness.run_cluster(story, harness.spec(nodes=3))
    assert 40 <= unknown_after <= 60, unknown_after
    assert after == before, "the restarted kubelet re-adopted the running containers"
    events = world.journal.events
    kubelet = [e for e in events if e["type"] == "kubelet" and e.get("node") == node and e["event"] in ("start", "stop")]
    assert [e["event"] for e in kubelet] == ["start", "stop", "start"]
    assert kubelet[-1]["adopted"], "the second start adopted the running pod"
    assert not [e for e in events if e["type"] == "process" and e["process"] == node and e["event"] == "kill"]


async def _all_ready(client, app, count):
    return await harness.ready_count(client, app) == count


async def _ready_is(client, node, status):
    return await node_ready(client, node) == status


def test_kubelet_stop_applies_to_node_processes_only():
    async def main(world):
        world.spawn("node-1", harness.idle, role="node", zone="z")
        world.spawn("etcd-1", harness.idle, role="etcd", zone="z")
        injector = FaultInjector(world, context_of(world))
        assert injector.inject("kubelet-stop", "name:etcd-1") is None
        assert "applies to processes of role 'node'" in injector.skipped[-1]
        mixed = injector.inject("kubelet-stop", "zone:z")
        assert mixed is not None and mixed.plan.targets == ("node-1",) and "etcd-1" in mixed.plan.note
        assert world.process("etcd-1").memory.get(KUBELET_SWITCH_KEY) is None

    World(1).run(main)


# =========================================================================== healing order
def switch_state(world, name):
    switch = world.process(name).memory.get(KUBELET_SWITCH_KEY)
    return None if switch is None else switch.running


@pytest.mark.parametrize("order", ["stop-first", "other-first"])
def test_kubelet_stop_heals_in_either_order_with_an_overlapping_kubelet_stop(order):
    async def main(world):
        for index in (1, 2):
            world.spawn(f"node-{index}", harness.idle, role="node")
        injector = FaultInjector(world, context_of(world))
        one = injector.inject("kubelet-stop", "name:node-1")
        every = injector.inject("kubelet-stop", "role:node")
        assert (switch_state(world, "node-1"), switch_state(world, "node-2")) == (False, False)
        first, second = (one, every) if order == "stop-first" else (every, one)
        injector.heal(first)
        injector.heal(first)
        assert switch_state(world, "node-1") is False, "node-1 is still named by an active stop"
        assert switch_state(world, "node-2") is (order == "other-first")
        injector.heal(second)
        injector.heal_all()
        assert (switch_state(world, "node-1"), switch_state(world, "node-2")) == (True, True)

    World(1).run(main)


@pytest.mark.parametrize("order", ["power-first", "stop-first"])
def test_kubelet_stop_survives_a_node_failure_healed_first_and_heals_after_it(order):
    async def main(world):
        world.spawn("node-1", harness.idle, role="node")
        injector = FaultInjector(world, context_of(world))
        stop = injector.inject("kubelet-stop", "name:node-1")
        power = injector.inject("node-failure", "name:node-1")
        assert not world.process("node-1").alive
        if order == "power-first":
            injector.heal(power)
            assert world.process("node-1").running and switch_state(world, "node-1") is False, "rebooted with its kubelet still stopped"
            injector.heal(stop)
        else:
            injector.heal(stop)
            injector.heal(power)
        injector.heal_all()
        assert world.process("node-1").running
        assert switch_state(world, "node-1") in (True, None), "the kubelet runs (a fresh switch is on)"

    World(1).run(main)


@pytest.mark.parametrize("order", ["error-first", "kill-first"])
def test_webhook_error_heals_in_either_order_with_a_kill_of_the_same_webhook(order):
    async def main(world):
        world.spawn("hook", harness.idle, role="webhook")
        injector = FaultInjector(world, context_of(world))
        error = injector.inject("webhook-error", "role:webhook", {"code": 503})
        kill = injector.inject("kill", "role:webhook")
        first, second = (error, kill) if order == "error-first" else (kill, error)
        injector.heal(first)
        fault = world.process("hook").memory.get(SERVER_FAULT_KEY)
        if order == "kill-first":
            assert world.process("hook").running and fault is not None and fault.error_code == 503, "restarted, still answering errors"
        else:
            assert not world.process("hook").alive
        injector.heal(second)
        injector.heal(second)
        fault = world.process("hook").memory.get(SERVER_FAULT_KEY)
        assert world.process("hook").running and (fault is None or fault.error_code is None)

    World(1).run(main)


def test_new_kinds_validate_their_parameters_and_drain_needs_an_admin():
    with pytest.raises(FaultError, match="'code' = 200 is out of range"):
        ScheduledFault(0, "webhook-error", "role:webhook", params={"code": 200})
    with pytest.raises(FaultError, match="must be an integer"):
        ScheduledFault(0, "webhook-error", "role:webhook", params={"code": 500.0})
    with pytest.raises(FaultError, match="has no parameter"):
        ScheduledFault(0, "kubelet-stop", "role:node", params={"seconds": 1})

    async def main(world):
        world.spawn("node-1", harness.idle, role="node")
        injector = FaultInjector(world, context_of(world))
        assert injector.inject("drain", "role:node") is None
        assert "needs a system with an API" in injector.skipped[-1]

    World(1).run(main)


# =========================================================================== drain
def pdb(name, min_available):
    return from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}}})


def test_drain_cordons_evicts_within_the_pdb_and_heal_uncordons():
    async def story(world, cluster, client):
        await client.create(harness.deployment("web", 4))
        await client.create(pdb("web", 3))
        assert await until(world, lambda: _all_ready(client, "web", 4), 60)
        await world.sleep(5)  # the disruption controller publishes the PDB's status
        counts = {}
        for pod in await harness.pods_of(client, "web"):
            counts[pod.spec.node_name] = counts.get(pod.spec.node_name, 0) + 1
        node = min(counts, key=lambda name: (-counts[name], name))
        admin = KubectlAdmin(types.SimpleNamespace(_client=client, world=world))
        injector = FaultInjector(world, context_of(world, cluster, admin))
        first = injector.inject("drain", f"name:{node}")
        second = injector.inject("drain", f"name:{node}")  # overlapping: the same node again

        async def drained():
            pods = [p for p in await harness.pods_of(client, "web") if p.spec.node_name == node]
            return not pods and await harness.ready_count(client, "web") == 4

        assert await until(world, drained, 90)
        cordoned = (await client.get("nodes", "", node)).spec.unschedulable
        injector.heal(first)
        await world.sleep(3)
        still = (await client.get("nodes", "", node)).spec.unschedulable
        injector.heal(second)
        injector.heal(second)
        injector.heal_all()

        async def uncordoned():
            return not (await client.get("nodes", "", node)).spec.unschedulable

        assert await until(world, uncordoned, 10)
        return node, counts[node], cordoned, still

    world, (node, had, cordoned, still) = harness.run_cluster(story, harness.spec(nodes=3))
    assert had >= 2 and cordoned is True and still is True
    events = world.journal.events
    evicts = [e for e in events if e["type"] == "drain" and e["node"] == node and e["event"] == "evict"]
    assert sum(1 for e in evicts if e["code"] == 201) == had
    assert any(e["code"] == 429 for e in evicts), "the PDB held the second eviction back until a replacement was ready"
    assert sum(1 for e in events if e["type"] == "drain" and e["event"] == "cordon") == 1, "one drain for two overlapping faults"
    actions = [(e["action"], e["outcome"]) for e in events if e["type"] == "fault-action"]
    assert actions == [("drain", "drained"), ("uncordon", "uncordoned")]
    verdict = check_pdb_eviction(events)
    assert verdict.valid is True, verdict.reason
    assert len(verdict.details["voluntary"]) == had, "each eviction of the drain was judged as a voluntary disruption"


# =========================================================================== webhooks
STRICT = WebhookSpec(name="strict", type="validating", failure_policy="Fail", timeout_seconds=5, resources=["pods"])
LENIENT = WebhookSpec(name="lenient", type="validating", failure_policy="Ignore", timeout_seconds=5, resources=["services"])


def bare_pod(name):
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}})


def service(name):
    return from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}})


async def outcome_of(client, obj):
    try:
        await client.create(obj)
    except ApiError as error:
        return error.code, str(error)
    return 201, ""


def test_webhook_error_and_delay_follow_the_failure_policy_and_the_timeout():
    async def story(world, cluster, client):
        async def configured():
            try:
                return len((await client.list("validatingwebhookconfigurations")).items) == 2
            except ApiError:
                return False

        assert await until(world, configured, 30)
        await world.sleep(2)  # the API servers' informers see the configurations
        injector = FaultInjector(world, context_of(world, cluster))
        seen = {}
        error = injector.inject("webhook-error", "role:webhook")
        assert error is not None and set(error.plan.targets) == {STRICT.service, LENIENT.service}
        seen["error-fail"] = await outcome_of(client, bare_pod("p1"))
        seen["error-ignore"] = await outcome_of(client, service("s1"))
        injector.heal(error)
        injector.heal(error)
        seen["healed"] = await outcome_of(client, bare_pod("p2"))
        within = injector.inject("webhook-delay", "role:webhook", {"delay_ms": 3000.0})
        started = world.now
        seen["within"] = await outcome_of(client, bare_pod("p3"))
        seen["within-latency"] = world.now - started
        injector.heal(within)
        beyond = injector.inject("webhook-delay", "role:webhook", {"delay_ms": 6000.0})
        seen["beyond-fail"] = await outcome_of(client, bare_pod("p4"))
        seen["beyond-ignore"] = await outcome_of(client, service("s2"))
        injector.heal_all()
        injector.heal(beyond)
        seen["end"] = await outcome_of(client, bare_pod("p5"))
        return seen

    world, seen = harness.run_cluster(story, harness.spec(nodes=1, zones=("zone-a",), webhooks=[STRICT, LENIENT]))
    code, message = seen["error-fail"]
    assert code == 500
    assert ('Internal error occurred: failed calling webhook "strict.chaoskube.io": failed to call webhook: '
            'an error on the server ("Internal Server Error") has prevented the request from succeeding') in message
    assert seen["error-ignore"] == (201, "")
    assert seen["healed"] == (201, "")
    assert seen["within"] == (201, "") and 3.0 <= seen["within-latency"] < 5.0
    code, message = seen["beyond-fail"]
    assert code == 500 and 'failed calling webhook "strict.chaoskube.io"' in message and "context deadline exceeded" in message
    assert seen["beyond-ignore"] == (201, "")
    assert seen["end"] == (201, "")
    calls = [e for e in world.journal.events if e["type"] == "webhook-call"]
    assert any(e["outcome"] == "ignored-error" and e["webhook"] == "lenient.chaoskube.io" for e in calls)


def test_webhook_error_answers_the_code_it_is_given():
    async def story(world, cluster, client):
        async def configured():
            try:
                return len((await client.list("validatingwebhookconfigurations")).items) == 1
            except ApiError:
                return False

        assert await until(world, configured, 30)
        await world.sleep(2)
        injector = FaultInjector(world, context_of(world, cluster))
        injector.inject("webhook-error", f"name:{STRICT.service}", {"code": 503})
        return await outcome_of(client, bare_pod("p1"))

    _, (code, message) = harness.run_cluster(story, harness.spec(nodes=1, zones=("zone-a",), webhooks=[STRICT]))
    assert code == 500 and message.endswith("failed to call webhook: the server is currently unable to handle the request"), message


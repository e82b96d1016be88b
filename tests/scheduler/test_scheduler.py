"""The scheduler against the simulated API servers: a 3-member etcd, one kube-apiserver,
and the scheduler in its own process, authenticated as ``system:kube-scheduler``.

Each story creates Nodes and Pods as an admin would, lets the scheduler work in virtual
time and checks what the API shows (bindings, pod conditions) and what the journal says
(``scheduled``, ``scheduler-event``, ``preempted``). A test plays the kubelet where a pod
must finish terminating (delete with grace 0)."""

from __future__ import annotations

from collections import Counter

import trio

from chaoskube.api.identity import user_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.protocol import DeleteOptions
from chaoskube.client.client import ApiClient
from chaoskube.client.informer import SharedInformerFactory
from chaoskube.scheduler.framework import Status
from chaoskube.scheduler.plugins import DefaultBinder, default_plugins
from chaoskube.scheduler.scheduler import Scheduler
from tests.apiserver.apiserver_harness import run_api
from tests.scheduler import ZONE, anti_affinity, make_node, make_pod, pod_affinity, spread_constraint

SERVERS = ["kube-apiserver-1"]


def start_scheduler(world, facts, *, plugins=None):
    """Spawn ``kube-scheduler``: its own client and informer factory, then ``run``."""

    async def main(process):
        client = ApiClient(process, SERVERS, user_credentials("system:kube-scheduler"))
        factory = SharedInformerFactory(client)
        scheduler = Scheduler(process, client, factory, plugins=plugins(client) if plugins else None)
        facts["scheduler"] = scheduler
        async with trio.open_nursery() as nursery:
            factory.start(nursery)
            await scheduler.run()

    world.spawn("kube-scheduler", main, role="scheduler")


async def create(api, obj):
    namespace = obj.metadata.namespace if obj.NAMESPACED else ""
    response = await api("create", obj.RESOURCE, namespace=namespace, body=obj)
    assert response.code == 201, response
    return response.object


async def pods(api):
    return {pod.metadata.name: pod for pod in (await api("list", "pods", namespace="default")).items}


async def wait_until(api, predicate, *, within_s=30.0, every_s=0.25):
    """Poll the pods until ``predicate(pods)`` holds; returns the pods."""
    deadline = api.process.now() + within_s
    while True:
        current = await pods(api)
        if predicate(current):
            return current
        assert api.process.now() < deadline, {name: (p.spec.node_name, p.status.conditions) for name, p in current.items()}
        await api.process.sleep(every_s)


def bound(names):
    return lambda current: all(current[name].spec.node_name for name in names if name in current) and all(name in current for name in names)


def scheduled_events(world):
    return {event["pod"]: event for event in world.journal.of_type("scheduled")}


def failed_scheduling(world, pod):
    return [event["message"] for event in world.journal.of_type("scheduler-event") if event["pod"] == f"default/{pod}"]


def condition(pod, kind="PodScheduled"):
    return next((c for c in pod.status.conditions if c.type == kind), None)


async def kubelet_finish_deletion(api, name):
    """What the kubelet does once a pod's containers stopped: delete with grace 0."""
    response = await api("delete", "pods", namespace="default", name=name, delete_options=DeleteOptions(grace_period_seconds=0))
    assert response.code in (200, 202), response


# =========================================================================== stories
def test_resources_are_respected_and_a_freed_node_takes_the_waiting_pod():
    """Six 1-CPU pods fill three 2-CPU nodes; the seventh fails with upstream's message
    (no victim: every pod has priority 0), and is scheduled as soon as a bound pod goes
    (AssignedPodDelete moves it)."""
    facts = {}

    async def story(world, api, registry):
        for index, zone in enumerate("abc", start=1):
            await create(api, make_node(f"node-{index}", cpu="2", memory="4Gi", zone=zone))
        start_scheduler(world, facts)
        for index in range(6):
            await create(api, make_pod(f"web-{index}", cpu="1"))
        first = await wait_until(api, bound([f"web-{index}" for index in range(6)]))
        await create(api, make_pod("extra", cpu="1"))
        pending = await wait_until(api, lambda current: condition(current["extra"]) is not None)
        await kubelet_finish_deletion(api, "web-0")
        after = await wait_until(api, bound(["extra"]))
        return first, pending["extra"], after

    world, (first, pending, after) = run_api(story, seed=3)
    per_node = Counter(pod.spec.node_name for pod in first.values())
    assert per_node == {"node-1": 2, "node-2": 2, "node-3": 2}
    message = (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    assert failed_scheduling(world, "extra")[0] == message
    scheduled = condition(pending)
    assert (scheduled.status, scheduled.reason, scheduled.message) == ("False", "Unschedulable", message)
    assert after["extra"].spec.node_name == first["web-0"].spec.node_name
    events = scheduled_events(world)
    assert events["default/extra"]["attempts"] >= 2 and len(events) == 7
    assert condition(after["extra"]).status == "True"


def test_the_failed_scheduling_message_for_taints_and_a_too_small_node():
    """The message of the brief, word for word: one node too small for the pod, two with a
    taint it does not tolerate; preemption cannot help anywhere. Tolerating pods and small
    pods land where they may."""
    facts = {}
    taint = [{"key": "key", "value": "value", "effect": "NoSchedule"}]
    tolerate = [{"key": "key", "operator": "Equal", "value": "value", "effect": "NoSchedule"}]

    async def story(world, api, registry):
        await create(api, make_node("small", cpu="1", zone="a"))
        await create(api, make_node("tainted-1", cpu="4", zone="b", taints=taint))
        await create(api, make_node("tainted-2", cpu="4", zone="c", taints=taint))
        start_scheduler(world, facts)
        await create(api, make_pod("huge", cpu="2"))
        await create(api, make_pod("tiny", cpu="500m"))
        await create(api, make_pod("tolerant", cpu="2", tolerations=tolerate))
        return await wait_until(api, lambda current: bound(["tiny", "tolerant"])(current) and condition(current["huge"]) is not None)

    world, current = run_api(story, seed=5)
    message = (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {key: value}. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert failed_scheduling(world, "huge") == [message]
    assert condition(current["huge"]).message == message and not current["huge"].spec.node_name
    assert current["tiny"].spec.node_name == "small"
    assert current["tolerant"].spec.node_name in ("tainted-1", "tainted-2")


def test_affinity_and_anti_affinity():
    """Required anti-affinity on the hostname puts three replicas on three nodes and keeps
    a fourth pending; required affinity to a zone follows the pod it names."""
    facts = {}
    web = {"app": "web"}

    async def story(world, api, registry):
        for index, zone in enumerate("abc", start=1):
            await create(api, make_node(f"node-{index}", zone=zone))
        await create(api, make_pod("db", node_name="node-2", labels={"app": "db"}))
        start_scheduler(world, facts)
        for index in range(4):
            await create(api, make_pod(f"web-{index}", labels=web, affinity=anti_affinity(web)))
        await create(api, make_pod("cache", affinity=pod_affinity({"app": "db"})))
        return await wait_until(api, lambda current: sum(1 for n in range(4) if current[f"web-{n}"].spec.node_name) == 3
                                and condition(current[next(f"web-{n}" for n in range(4) if not current[f"web-{n}"].spec.node_name)]) is not None
                                and current["cache"].spec.node_name)

    world, current = run_api(story, seed=11)
    placed = [current[f"web-{n}"].spec.node_name for n in range(4) if current[f"web-{n}"].spec.node_name]
    assert sorted(placed) == ["node-1", "node-2", "node-3"]
    waiting = next(f"web-{n}" for n in range(4) if not current[f"web-{n}"].spec.node_name)
    assert failed_scheduling(world, waiting)[0] == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    assert current["cache"].spec.node_name == "node-2"


def test_spread_across_three_zones():
    """``maxSkew: 1`` over ``topology.kubernetes.io/zone`` with DoNotSchedule: six pods go
    two per zone, although LeastAllocated alone prefers the big node in zone a."""
    facts = {}
    labels = {"app": "spread"}

    async def story(world, api, registry):
        await create(api, make_node("big", cpu="32", memory="64Gi", zone="a"))
        await create(api, make_node("mid", cpu="4", memory="8Gi", zone="b"))
        await create(api, make_node("low", cpu="4", memory="8Gi", zone="c"))
        start_scheduler(world, facts)
        for index in range(6):
            await create(api, make_pod(f"s-{index}", cpu="100m", labels=labels, spread=[spread_constraint(labels)]))
        for index in range(3):
            await create(api, make_pod(f"free-{index}", cpu="100m"))
        return await wait_until(api, bound([*(f"s-{i}" for i in range(6)), *(f"free-{i}" for i in range(3))]))

    world, current = run_api(story, seed=17)
    zones = {"big": "a", "mid": "b", "low": "c"}
    spread = Counter(zones[current[f"s-{i}"].spec.node_name] for i in range(6))
    assert spread == {"a": 2, "b": 2, "c": 2}
    assert Counter(current[f"free-{i}"].spec.node_name for i in range(3))["big"] >= 2
    assert ZONE in make_node("x", zone="z").metadata.labels


def test_preemption_prefers_the_victim_no_pdb_protects_and_respects_never():
    """Two full 1-CPU nodes run low-priority pods; the one on node-1 is guarded by a PDB
    that allows no disruption. A high-priority pod preempts the other: it gets the
    DisruptionTarget condition and a deletion timestamp, the preemptor is nominated to
    node-2 and bound there once the victim is gone. A pod of a ``preemptionPolicy:
    Never`` class preempts nobody."""
    facts = {}

    async def story(world, api, registry):
        classes = [("low", 100, None), ("high", 1000, None), ("high-never", 1000, "Never")]
        for name, value, policy in classes:
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
            if policy:
                body["preemptionPolicy"] = policy
            await create(api, from_dict(body))
            await api.eventually("get", "priorityclasses", lambda r: r.ok, name=name, resource_version="0")
        for name in ("node-1", "node-2"):
            await create(api, make_node(name, cpu="1"))
        await create(api, make_pod("protected", node_name="node-1", cpu="1", priority_class="low", labels={"app": "db"}))
        await create(api, make_pod("free", node_name="node-2", cpu="1", priority_class="low", labels={"app": "batch"}))
        for name, labels in (("db", {"app": "db"}), ("batch", {"app": "batch"})):
            budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}}
            await create(api, from_dict(budget))
        # As admin: the disruption controller's verdicts (db: none allowed; batch: one).
        patched = await api("patch", "poddisruptionbudgets", namespace="default", name="batch", subresource="status",
                            body={"status": {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}})
        assert patched.code == 200, patched
        start_scheduler(world, facts)
        await create(api, make_pod("vip", cpu="1", priority_class="high"))
        marked = await wait_until(api, lambda current: current["free"].metadata.deletion_timestamp is not None
                                  and current["vip"].status.nominated_node_name)
        await kubelet_finish_deletion(api, "free")
        done = await wait_until(api, bound(["vip"]))
        await create(api, make_pod("never", cpu="1", priority_class="high-never"))
        final = await wait_until(api, lambda current: condition(current["never"]) is not None)
        return marked, done, final

    world, (marked, done, final) = run_api(story, seed=23)
    target = condition(marked["free"], "DisruptionTarget")
    assert (target.status, target.reason, target.message) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    assert marked["vip"].status.nominated_node_name == "node-2"
    assert marked["protected"].metadata.deletion_timestamp is None
    assert [(e["pod"], e["preemptor"], e["node"]) for e in world.journal.of_type("preempted")] == [("default/free", "default/vip", "node-2")]
    assert failed_scheduling(world, "vip")[0] == "0/2 nodes are available: 2 Insufficient cpu."
    assert done["vip"].spec.node_name == "node-2"
    assert "free" not in done and done["protected"].spec.node_name == "node-1"
    assert condition(final["never"]).message == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.")
    assert final["protected"].metadata.deletion_timestamp is None and final["vip"].metadata.deletion_timestamp is None


class FlakyBinder(DefaultBinder):
    """DefaultBinder whose first ``failures`` bindings fail as a refused API call would."""

    def __init__(self, client, failures):
        super().__init__(client)
        self.failures = failures
        self.seen = []

    async def bind(self, state, pod, node_name):
        self.seen.append((pod.metadata.name, node_name, self.client.process.now()))
        if self.failures > 0:
            self.failures -= 1
            return Status.error("injected: the binding was refused")
        return await super().bind(state, pod, node_name)


def test_a_failed_binding_forgets_the_assumed_pod_and_retries_after_backoff():
    """``handleBindingCycleError``: the assumed pod is forgotten (else its CPU would still
    be counted and the one node would look full), the failure is reported as a
    SchedulerError, and the pod is bound on its second attempt, after the 1 s backoff."""
    facts = {}
    binders = []

    def plugins(client):
        profile = [(FlakyBinder(client, failures=1), 0) if isinstance(p, DefaultBinder) else (p, w) for p, w in default_plugins(client)]
        binders.extend(p for p, _ in profile if isinstance(p, FlakyBinder))
        return profile

    async def story(world, api, registry):
        await create(api, make_node("only", cpu="1"))
        start_scheduler(world, facts, plugins=plugins)
        await create(api, make_pod("job", cpu="1"))
        return await wait_until(api, bound(["job"]))

    world, current = run_api(story, seed=29)
    assert current["job"].spec.node_name == "only"
    (first, _, failed_at), (second, node, bound_at) = binders[0].seen
    assert (first, second, node) == ("job", "job", "only")
    assert bound_at - failed_at >= 1.0  # podInitialBackoffSeconds
    assert failed_scheduling(world, "job") == ["injected: the binding was refused"]
    assert scheduled_events(world)["default/job"]["attempts"] == 2
    statistics = facts["scheduler"].statistics()
    assert statistics["bind_errors"] == 1 and statistics["scheduled"] == 1 and statistics["pods"] == 1


def test_the_same_seed_schedules_the_same_way():
    """Ties between equal nodes are broken by the scheduler's seeded generator: one seed,
    one placement, and another seed may place differently."""

    def placement(seed):
        facts = {}

        async def story(world, api, registry):
            for index in range(4):
                await create(api, make_node(f"node-{index}"))
            start_scheduler(world, facts)
            for index in range(4):
                await create(api, make_pod(f"p-{index}", cpu="100m"))
            current = await wait_until(api, bound([f"p-{i}" for i in range(4)]))
            return tuple(current[f"p-{i}"].spec.node_name for i in range(4))

        world, result = run_api(story, seed=seed)
        return result, [(e["pod"], e["node"]) for e in world.journal.of_type("scheduled")]

    assert placement(41) == placement(41)
    assert len({placement(seed)[0] for seed in (41, 42, 43, 44)}) > 1


def test_a_new_node_brings_a_waiting_pod_in():
    """NodeAffinity registered NodeAdd: a pod that no node's labels allow waits in
    unschedulablePods and is scheduled when a matching node joins (well before the 5 min
    leftover flush)."""
    facts = {}

    async def story(world, api, registry):
        await create(api, make_node("node-a", zone="a"))
        start_scheduler(world, facts)
        await create(api, make_pod("wants-d", node_selector={ZONE: "d"}))
        await wait_until(api, lambda current: condition(current["wants-d"]) is not None)
        assert facts["scheduler"].queue.where("default/wants-d") == "unschedulable"
        joined = world.now
        await create(api, make_node("node-d", zone="d"))
        await wait_until(api, bound(["wants-d"]))
        return joined

    world, joined = run_api(story, seed=31)
    event = scheduled_events(world)["default/wants-d"]
    assert event["node"] == "node-d" and event["t"] - joined < 5.0
    assert failed_scheduling(world, "wants-d")[0] == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_a_killed_scheduler_restarts_from_the_api_and_binds_every_pod_once():
    """The queue and the cache are memory: a restarted scheduler relists and finishes the
    job; a binding that raced the kill is refused (409) rather than done twice."""
    facts = {}

    async def story(world, api, registry):
        for index in range(3):
            await create(api, make_node(f"node-{index}", cpu="2"))
        start_scheduler(world, facts)
        await api.process.sleep(2.0)
        for index in range(9):
            await create(api, make_pod(f"p-{index}", cpu="500m"))
        scheduler = world.process("kube-scheduler")
        scheduler.kill()
        await api.process.sleep(1.0)
        scheduler.restart()
        return await wait_until(api, bound([f"p-{i}" for i in range(9)]))

    world, current = run_api(story, seed=37)
    per_node = Counter(pod.spec.node_name for pod in current.values())
    assert sum(per_node.values()) == 9 and max(per_node.values()) <= 4  # 2 CPU / 500m
    bindings = [e for e in world.journal.of_type("api-op") if e["subresource"] == "binding"]
    ok = [e["name"] for e in bindings if e["phase"] == "ok"]
    assert len(ok) == len(set(ok)), "a pod was bound twice"
    pending: dict[int, str] = {}  # op ids restart with the new incarnation: match in order
    cut_short: set[str] = set()
    for event in bindings:
        if event["phase"] == "invoke":
            if event["op_id"] in pending:
                cut_short.add(pending[event["op_id"]])
            pending[event["op_id"]] = event["name"]
        else:
            pending.pop(event["op_id"], None)
    cut_short |= set(pending.values())
    assert cut_short, "the kill should catch bindings in flight"
    assert set(ok) | cut_short == {f"p-{i}" for i in range(9)}

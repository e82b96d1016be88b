"""The kubelet against real (simulated) API servers: registration, node status and lease,
pods through the simulated runtime (readiness, liveness, CrashLoopBackOff, restart
policies), graceful deletion, re-adoption after a kubelet restart, and kubectl drain
against a PodDisruptionBudget. Each test is a story on one node, ``node-1``, driven by an
administrator's client; the kubelet's decisions are read back through the API and from
the journal."""

import ipaddress

import msgspec
import pytest
import trio

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import OwnerReference, PodCondition, Taint
from chaoskube.api.protocol import DeleteOptions, parse_timestamp
from chaoskube.client.client import ApiError
from chaoskube.config import KubeletConfig
from chaoskube.node.kubelet import allocatable_of, drain, generate_pod_status, initial_node, node_status_changed, pods_to_evict, qos_class
from tests.apiserver.apiserver_harness import run_api
from tests.node import admin, condition, events, kubelet_process, node_spec, pod_manifest

NODE = "node-1"
SPEC = node_spec(NODE, taints=(Taint(key="dedicated", value="chaos", effect="PreferNoSchedule"),))
CONFIG = KubeletConfig()


def run_node(story, *, seed=1, config=None):
    """Run ``story(world, client, kubelets)`` with one kubelet on ``node-1``."""
    kubelets = {}

    async def main(world, caller, _servers):
        client = admin(caller.process)
        return await story(world, client, kubelets)

    return run_api(main, seed=seed, processes=[(NODE, kubelet_process(SPEC, kubelets, config))])


async def wait_for(world, client, name, predicate, *, within_s=60.0, every_s=0.5):
    """Poll the pod until ``predicate(pod)``; answers the pod (or fails the test)."""
    deadline = world.now + within_s
    while True:
        try:
            pod = await client.get("pods", "default", name)
        except ApiError as error:
            pod = None if error.code == 404 else pytest.fail(f"get {name}: {error}")
        if predicate(pod):
            return pod
        assert world.now < deadline, f"{name}: condition not reached within {within_s}s; last: {pod and pod.status}"
        await world.sleep(every_s)


def ready(pod):
    return pod is not None and (c := condition(pod, "Ready")) is not None and c.status == "True"


def times(world, kind, **match):
    return [event["t"] for event in events(world, kind, **match)]


# -- the node ----------------------------------------------------------------------------------


def test_node_registers_then_reports_status_only_when_changed_and_renews_its_lease_every_10s():
    async def story(world, client, kubelets):
        await world.sleep(320)
        return await client.get("nodes", "", NODE), await client.get("leases", "kube-node-lease", NODE)

    world, (node, lease) = run_node(story)
    labels = node.metadata.labels
    assert labels["kubernetes.io/hostname"] == NODE and labels["kubernetes.io/os"] == "linux"
    assert labels["topology.kubernetes.io/zone"] == "zone-1"
    assert node.spec.pod_cidr == "10.244.1.0/24"
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [("dedicated", "chaos", "PreferNoSchedule")]
    assert node.status.capacity == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert node.status.allocatable["memory"] == "8286208Ki"  # 8Gi - 100Mi (evictionHard)
    conditions = {c.type: c for c in node.status.conditions}
    assert [c.type for c in node.status.conditions] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert (conditions["Ready"].status, conditions["Ready"].reason, conditions["Ready"].message) == ("True", "KubeletReady", "kubelet is posting ready status")
    assert conditions["MemoryPressure"].status == "False"
    assert [(a.type, a.address) for a in node.status.addresses] == [("InternalIP", "10.0.0.11"), ("Hostname", NODE)]

    assert lease.spec.holder_identity == NODE and lease.spec.lease_duration_seconds == 40
    assert [(o.kind, o.name, o.uid) for o in lease.metadata.owner_references] == [("Node", NODE, node.metadata.uid)]
    renewals = times(world, "api-op", client=NODE, verb="update", resource="leases", phase="ok")
    gaps = [b - a for a, b in zip(renewals, renewals[1:])]
    assert len(renewals) >= 29
    assert all(10.0 <= gap <= 10.4 + 0.05 for gap in gaps), gaps  # 25% of 40 s, jitter 0.04
    # Status: the heartbeat alone is no change; a report is due every 5 minutes anyway.
    patches = times(world, "api-op", client=NODE, verb="patch", resource="nodes", subresource="status", phase="ok")
    assert len(patches) == 2 and 300.0 <= patches[1] - patches[0] <= 312.0, patches
    heartbeat = parse_timestamp(conditions["Ready"].last_heartbeat_time)
    assert heartbeat == pytest.approx(patches[1], abs=1.0)
    assert parse_timestamp(conditions["Ready"].last_transition_time) < patches[0] + 1


def test_node_status_helpers():
    node = initial_node(SPEC, 100.0)
    later = [msgspec.structs.replace(c, last_heartbeat_time="2026-01-01T00:03:20Z") for c in node.status.conditions]
    assert not node_status_changed(node.status, msgspec.structs.replace(node.status, conditions=later))  # heartbeats only
    assert node_status_changed(node.status, initial_node(SPEC, 200.0).status)  # transition times differ
    other = initial_node(node_spec(NODE, capacity={"cpu": "8", "memory": "8Gi", "pods": "110"}), 200.0)
    assert node_status_changed(node.status, other.status)
    assert allocatable_of({"cpu": "2", "memory": "1Gi", "pods": "10"}) == {"cpu": "2", "memory": f"{(1024 - 100) * 1024}Ki", "pods": "10"}


# -- pods --------------------------------------------------------------------------------------


def test_a_bound_pod_becomes_running_and_ready_with_the_right_status():
    async def story(world, client, kubelets):
        created = await client.create(pod_manifest("web", NODE, readinessProbe={"httpGet": {"path": "/", "port": 80}, "periodSeconds": 5}))
        pod = await wait_for(world, client, "web", ready)
        return created, pod

    world, (created, pod) = run_node(story)
    status = pod.status
    assert status.phase == "Running"
    assert [(c.type, c.status) for c in status.conditions] == [("Initialized", "True"), ("Ready", "True"), ("ContainersReady", "True"), ("PodScheduled", "True")]
    (container,) = status.container_statuses
    assert container.state.running is not None and container.ready and container.started and container.restart_count == 0
    assert container.container_id.startswith("containerd://") and container.image == "registry.k8s.io/app:1.0"
    assert ipaddress.ip_address(status.pod_ip) in ipaddress.ip_network("10.244.1.0/24") and status.pod_ip == "10.244.1.2"
    assert status.host_ip == "10.0.0.11" and status.start_time is not None and status.qos_class == "BestEffort"
    phases = [e["phase"] for e in events(world, "pod-phase", pod="default/web")]
    assert phases == ["Running"]  # changes of the phase the API had (Pending at creation)
    (start,) = events(world, "container-start", pod="default/web")
    # Ready at the first readiness probe after the start, at most one period later.
    ready_at = parse_timestamp(condition(pod, "Ready").last_transition_time)
    assert start["t"] - 1 <= ready_at <= start["t"] + 5 + 1
    # sandbox 0.5 s, image pull 2 s, container start 0.5 s after the pod was created
    created_at = parse_timestamp(created.metadata.creation_timestamp)
    assert 3.0 <= start["t"] - created_at <= 4.5


def test_readiness_failure_flips_ready_without_restarting():
    async def story(world, client, kubelets):
        probe = {"httpGet": {"path": "/ready", "port": 80}, "periodSeconds": 5, "failureThreshold": 2}
        await client.create(pod_manifest("web", NODE, annotations={"chaoskube.io/fail-readiness-after": "30s"}, readinessProbe=probe))
        await wait_for(world, client, "web", ready)
        return await wait_for(world, client, "web", lambda p: not ready(p), within_s=60)

    world, pod = run_node(story)
    (start,) = events(world, "container-start", pod="default/web")
    flipped = [e["t"] for e in events(world, "probe", pod="default/web", probe="readiness", result="Failure")]
    assert len(flipped) == 1 and start["t"] + 30 <= flipped[0] <= start["t"] + 30 + 2 * 5 + 0.1
    (container,) = pod.status.container_statuses
    assert container.state.running is not None and not container.ready and container.restart_count == 0
    ready_condition = condition(pod, "Ready")
    assert (ready_condition.status, ready_condition.reason) == ("False", "ContainersNotReady")
    assert ready_condition.message == "containers with unready status: [app]"
    assert pod.status.phase == "Running"


def test_liveness_failure_restarts_the_container_with_back_off():
    async def story(world, client, kubelets):
        probe = {"tcpSocket": {"port": 80}, "periodSeconds": 5, "failureThreshold": 3}
        await client.create(pod_manifest("web", NODE, annotations={"chaoskube.io/fail-liveness-after": "20s"}, livenessProbe=probe))
        return await wait_for(world, client, "web", lambda p: p.status.container_statuses and p.status.container_statuses[0].restart_count >= 2, within_s=150)

    world, pod = run_node(story)
    starts = events(world, "container-start", pod="default/web")
    kills = events(world, "container-kill", pod="default/web", cause="liveness")
    exits = events(world, "container-exit", pod="default/web", cause="liveness")
    assert [s["restart_count"] for s in starts][:3] == [0, 1, 2]
    assert len({s["container_id"] for s in starts}) == len(starts)
    # killed after 3 failures, probes 5 s apart, from 20 s after the start
    assert starts[0]["t"] + 20 + 10 <= kills[0]["t"] <= starts[0]["t"] + 20 + 15 + 0.1
    assert exits[0]["t"] == pytest.approx(kills[0]["t"] + 1.0, abs=0.01)  # SIGTERM handled in 1 s
    assert exits[0]["exit_code"] == 0
    # first restart at once (after the 0.5 s start latency), the next after a 10 s back-off
    assert starts[1]["t"] - exits[0]["t"] == pytest.approx(0.5, abs=0.05)
    assert starts[2]["t"] - exits[1]["t"] == pytest.approx(10.5, abs=0.05)
    container = pod.status.container_statuses[0]
    assert container.last_state.terminated is not None and container.last_state.terminated.reason == "Completed"


def test_a_crashing_container_backs_off_10s_doubling():
    async def story(world, client, kubelets):
        await client.create(pod_manifest("crash", NODE, annotations={"chaoskube.io/exit-after": "1s", "chaoskube.io/exit-code": "1"}))
        backing_off = await wait_for(
            world, client, "crash",
            lambda p: p.status.container_statuses and p.status.container_statuses[0].state.waiting is not None and p.status.container_statuses[0].state.waiting.reason == "CrashLoopBackOff",
        )
        await world.sleep(80)
        return backing_off

    world, pod = run_node(story)
    starts = [e["t"] for e in events(world, "container-start", pod="default/crash")]
    exits = [e["t"] for e in events(world, "container-exit", pod="default/crash")]
    waits = [round(start - exit_ - 0.5, 2) for exit_, start in zip(exits, starts[1:])]
    assert waits[:4] == [0.0, 10.0, 20.0, 40.0]
    container = pod.status.container_statuses[0]
    assert container.last_state.terminated.exit_code == 1 and container.last_state.terminated.reason == "Error"
    assert container.state.waiting.message.startswith("back-off 10s restarting failed container=app pod=crash_default(")
    assert pod.status.phase == "Running"  # restartPolicy Always: restarting


def test_restart_policies_never_and_on_failure_end_in_terminal_phases():
    async def story(world, client, kubelets):
        await client.create(pod_manifest("job-fails", NODE, restart_policy="Never", annotations={"chaoskube.io/exit-after": "2s", "chaoskube.io/exit-code": "3"}))
        await client.create(pod_manifest("job-works", NODE, restart_policy="OnFailure", annotations={"chaoskube.io/exit-after": "2s"}))
        failed = await wait_for(world, client, "job-fails", lambda p: p.status.phase == "Failed")
        succeeded = await wait_for(world, client, "job-works", lambda p: p.status.phase == "Succeeded")
        await world.sleep(20)
        return failed, succeeded, kubelets[NODE].runtime.statistics()

    world, (failed, succeeded, stats) = run_node(story)
    assert failed.status.container_statuses[0].state.terminated.exit_code == 3
    assert succeeded.status.container_statuses[0].state.terminated.reason == "Completed"
    assert (condition(failed, "Ready").status, condition(failed, "Ready").reason) == ("False", "PodFailed")
    assert condition(succeeded, "ContainersReady").reason == "PodCompleted"
    assert len(events(world, "container-start", pod="default/job-fails")) == 1  # never restarted
    assert stats["sandboxes"] == 0  # terminal pods' sandboxes are torn down


def test_deletion_is_graceful_and_ends_with_the_pod_gone():
    async def story(world, client, kubelets):
        await client.create(pod_manifest("polite", NODE, annotations={"chaoskube.io/shutdown-s": "3"}))
        await client.create(pod_manifest("stubborn", NODE, grace_s=5, annotations={"chaoskube.io/shutdown-s": "50"}))
        await wait_for(world, client, "polite", ready)
        await wait_for(world, client, "stubborn", ready)
        deleted_at = world.now
        pending = await client.delete("pods", "default", "polite")
        await client.delete("pods", "default", "stubborn")
        await wait_for(world, client, "polite", lambda p: p is None, within_s=40, every_s=0.1)
        await wait_for(world, client, "stubborn", lambda p: p is None, within_s=40, every_s=0.1)
        return deleted_at, pending, kubelets[NODE].runtime.statistics()

    world, (deleted_at, pending, stats) = run_node(story)
    assert pending.metadata.deletion_timestamp is not None and pending.metadata.deletion_grace_period_seconds == 30
    (polite,) = events(world, "container-exit", pod="default/polite")
    (stubborn,) = events(world, "container-exit", pod="default/stubborn")
    assert (polite["cause"], polite["exit_code"]) == ("deletion", 0) and polite["t"] - deleted_at == pytest.approx(3.0, abs=0.1)
    assert (stubborn["cause"], stubborn["exit_code"]) == ("deletion", 137) and stubborn["t"] - deleted_at == pytest.approx(5.0, abs=0.1)
    gone = {e["pod"]: e["t"] for e in events(world, "pod-deleted")}
    assert gone["default/polite"] - polite["t"] < 0.2 and gone["default/stubborn"] - stubborn["t"] < 0.2
    # the kubelet's final delete: grace 0, with the pod's UID as precondition
    final = [e for e in events(world, "api-op", client=NODE, verb="delete", resource="pods") if e["phase"] == "ok"]
    assert len(final) == 2 and all(e["code"] == 200 for e in final)
    assert stats["sandboxes"] == 0 and stats["running_containers"] == 0


def test_a_killed_kubelet_stops_renewing_and_a_restarted_one_re_adopts_its_containers():
    async def story(world, client, kubelets):
        await client.create(pod_manifest("web", NODE, readinessProbe={"exec": {"command": ["true"]}, "periodSeconds": 5}))
        before = await wait_for(world, client, "web", ready)
        node = world.process(NODE)
        killed_at = world.now
        node.kill()
        await world.sleep(30)
        node.restart()
        restarted_at = world.now
        after = await wait_for(world, client, "web", lambda p: ready(p) and world.now > restarted_at + 1, within_s=30)
        await world.sleep(15)
        return before, after, killed_at, restarted_at

    world, (before, after, killed_at, restarted_at) = run_node(story)
    old, new = before.status.container_statuses[0], after.status.container_statuses[0]
    assert new.container_id == old.container_id and new.restart_count == 0
    assert new.state.running.started_at == old.state.running.started_at
    assert after.status.pod_ip == before.status.pod_ip
    assert len(events(world, "container-start", pod="default/web")) == 1  # never started again
    starts = events(world, "kubelet", node=NODE, event="start")
    assert [s["adopted"] for s in starts] == [[], ["default/web"]]
    renewals = times(world, "api-op", client=NODE, verb="update", resource="leases", phase="ok")
    assert not [t for t in renewals if killed_at < t < restarted_at]  # a dead kubelet renews nothing
    assert [t for t in renewals if t > restarted_at]


def test_drain_waits_at_a_pdb_429_every_5s_and_finishes_when_disruptions_are_allowed():
    async def story(world, client, kubelets):
        for name in ("web-1", "web-2"):
            await client.create(pod_manifest(name, NODE, labels={"app": "web"}))
        daemon = pod_manifest("agent", NODE)
        daemon.metadata.owner_references = [OwnerReference(api_version="apps/v1", kind="DaemonSet", name="agent", uid="ds-uid", controller=True)]
        await client.create(daemon)
        for name in ("web-1", "web-2", "agent"):
            await wait_for(world, client, name, ready)
        pdb = await client.create(from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}))
        await set_budget(client, pdb.metadata.name, allowed=0)
        result = {}

        async def run_drain():
            result["drain"] = await drain(client, NODE, timeout_s=120)

        started = world.now
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_drain)
            await world.sleep(12)
            await set_budget(client, "web", allowed=2)
        node = await client.get("nodes", "", NODE)
        remaining = (await client.list("pods", "default")).items
        return started, result["drain"], node, [p.metadata.name for p in remaining]

    world, (started, result, node, remaining) = run_node(story)
    assert result.completed and result.evicted == ("default/web-1", "default/web-2")
    assert remaining == ["agent"]  # DaemonSet pods stay
    assert node.spec.unschedulable
    for pod in ("default/web-1", "default/web-2"):
        attempts = events(world, "drain", event="evict", pod=pod)
        refused = [a["t"] for a in attempts if a["code"] == 429]
        assert len(refused) == 3, attempts  # at 0, 5 and 10 s; the budget opens at 12 s
        assert all(4.9 <= b - a <= 5.2 for a, b in zip(refused, refused[1:]))
        assert refused[0] - started < 1.0
        assert attempts[-1]["code"] == 201 and 15.0 <= attempts[-1]["t"] - refused[0] <= 16.0  # the 4th try, 5 s after the 3rd
    assert sorted(e["pod"] for e in events(world, "eviction") if e["outcome"] == "evicted") == ["web-1", "web-2"]
    assert events(world, "drain", event="done")[0]["timed_out"] is False


async def set_budget(client, name, *, allowed):
    """What the disruption controller would write: the PDB's status, as an administrator."""
    pdb = await client.get("poddisruptionbudgets", "default", name)
    pdb.status.observed_generation = pdb.metadata.generation
    pdb.status.disruptions_allowed = allowed
    pdb.status.current_healthy = 2
    pdb.status.desired_healthy = 2 - allowed if allowed else 2
    pdb.status.expected_pods = 2
    await client.update_status(pdb)


# -- pure helpers ------------------------------------------------------------------------------


def test_pods_to_evict_skips_daemonset_and_mirror_pods():
    plain = pod_manifest("b", NODE)
    mirror = pod_manifest("a", NODE, annotations={"kubernetes.io/config.mirror": "x"})
    owned = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c", "namespace": "default", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u", "controller": True}]}, "spec": {"containers": [{"name": "x", "image": "x:1"}]}})
    replica = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a2", "namespace": "default", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}]}, "spec": {"containers": [{"name": "x", "image": "x:1"}]}})
    assert [p.metadata.name for p in pods_to_evict([plain, mirror, owned, replica])] == ["a2", "b"]


@pytest.mark.parametrize(
    "resources, expected",
    [
        ({}, "BestEffort"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "500m"}}, "Burstable"),
        ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}, "Burstable"),
    ],
)
def test_qos_class_is_get_pod_qos(resources, expected):
    assert qos_class(pod_manifest("p", NODE, resources=resources)) == expected


def test_pod_status_without_a_sandbox_is_pending_container_creating_and_keeps_other_conditions():
    pod = pod_manifest("p", NODE)
    pod.status.conditions = [PodCondition(type="DisruptionTarget", status="True")]
    status = generate_pod_status(pod, None, {}, {}, 5.0, host_ip="10.0.0.11", start_time="2026-01-01T00:00:05Z")
    assert status.phase == "Pending"
    assert [c.type for c in status.conditions] == ["DisruptionTarget", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    assert status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    containers_ready = next(c for c in status.conditions if c.type == "ContainersReady")
    assert (containers_ready.reason, containers_ready.message) == ("ContainersNotReady", "containers with unready status: [app]")
    assert status.pod_ip == "" and status.host_ip == "10.0.0.11"


# -- restarts and determinism ------------------------------------------------------------------


def test_a_pod_force_deleted_while_the_kubelet_was_down_is_cleaned_up_after_the_restart():
    async def story(world, client, kubelets):
        await client.create(pod_manifest("web", NODE))
        await wait_for(world, client, "web", ready)
        node = world.process(NODE)
        node.kill()
        await client.delete("pods", "default", "web", options=DeleteOptions(grace_period_seconds=0))
        await world.sleep(5)
        node.restart()
        await world.sleep(10)
        return kubelets[NODE].runtime.statistics()

    world, stats = run_node(story)
    (orphan,) = events(world, "kubelet", event="orphan")
    assert orphan["pod"] == "default/web"
    (exit_,) = events(world, "container-exit", pod="default/web")
    assert exit_["cause"] == "deletion" and exit_["exit_code"] == 0
    assert stats["sandboxes"] == 0 and stats["running_containers"] == 0
    assert not events(world, "pod-deleted")  # the API no longer had it


def test_the_same_seed_gives_the_same_journal():
    async def story(world, client, kubelets):
        await client.create(pod_manifest("web", NODE, annotations={"chaoskube.io/exit-after": "7s"}, readinessProbe={"exec": {"command": ["true"]}, "periodSeconds": 3}))
        await world.sleep(40)
        await client.delete("pods", "default", "web")
        await world.sleep(10)

    first, _ = run_node(story, seed=4)
    second, _ = run_node(story, seed=4)
    assert first.fingerprint == second.fingerprint
    assert events(first, "container-start") and events(first, "pod-deleted")


def test_a_pod_whose_claim_is_being_deleted_is_not_started():
    """desired_state_of_world_populator.go ``getPVCExtractPV`` (v1.32): "Pods that uses a
    PVC that is being deleted must not be started" -- the pod waits in ContainerCreating
    with the populator's error; a claim that is not being deleted lets it start."""
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default", "finalizers": ["example.com/hold"]},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}

    async def story(world, client, kubelets):
        await client.create(from_dict(claim))
        await client.delete("persistentvolumeclaims", "default", "data")  # marked: its finalizer holds it
        manifest = pod_manifest("db", NODE)
        manifest.spec.volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        await client.create(manifest)
        await world.sleep(20)
        return await client.get("pods", "default", "db")

    world, pod = run_node(story)
    assert pod.status.phase == "Pending"
    (container,) = pod.status.container_statuses
    assert container.state.waiting is not None and container.state.waiting.reason == "ContainerCreating"
    assert container.state.waiting.message == "Unable to attach or mount volumes: unmounted volumes=[data]: error processing PVC default/data: PVC is being deleted"
    assert not events(world, "container-start", pod="default/db")


def test_a_status_write_whose_answer_is_lost_does_not_leave_the_worker_spinning(monkeypatch):
    """The status manager's write commits but its answer is lost (503 after the commit, as
    when the API server dies mid-request): the retry is due in STATUS_RETRY_S, but the
    watch then brings the very status it wrote, so there is nothing left to report. The
    retry time must go with it: kept, it lay in the past and the worker woke every 1 µs
    (WAKE_EPSILON_S) for ever: swarm-apps seed 19 (a StatefulSet pod, after an API server kill) never got past t=102.6 s."""
    from chaoskube.api.protocol import Status
    from chaoskube.node.kubelet import PodWorker

    syncs = []
    real_sync = PodWorker.sync

    async def counted_sync(self):
        syncs.append(self.process.now())
        assert len(syncs) < 1000, f"the worker spins: {len(syncs)} syncs by t={self.process.now():.6f}"
        return await real_sync(self)

    monkeypatch.setattr(PodWorker, "sync", counted_sync)

    async def story(world, client, kubelets):
        kubelet = kubelets[NODE]
        real_patch = kubelet.client.patch
        lost = []

        async def patch(resource, namespace, name, body, **options):
            answer = await real_patch(resource, namespace, name, body, **options)
            if options.get("subresource") == "status" and not lost and world.now >= 5.0:
                # the status of the started container: the last change a pod with no probes makes
                lost.append(world.now)
                raise ApiError(Status(code=503, reason="ServiceUnavailable", message="the answer was lost"), ambiguous=True)
            return answer

        kubelet.client.patch = patch
        await client.create(pod_manifest("web", NODE))
        pod = await wait_for(world, client, "web", ready)
        await world.sleep(60.0)
        return lost, pod

    world, (lost, pod) = run_node(story)
    assert lost and ready(pod)
    after = [t for t in syncs if t > lost[0] + 1.0]
    # A running pod with no probes syncs every SYNC_FREQUENCY_S (1 min, plus wakes on its own
    # status updates): a handful in a minute, not millions.
    assert len(after) < 10, f"{len(after)} syncs in the minute after the lost answer"

"""The simulated runtime's pure core (behaviours, the probe worker, CrashLoopBackOff,
getPhase) with table tests and simple oracles, and its disk-backed shell in a World."""

import pytest
import trio

from chaoskube.api.objects import Container, ObjectMeta, Pod, PodSpec, Probe
from chaoskube.config import KubeletConfig
from chaoskube.node.runtime import (
    BackoffEntry,
    BehaviourError,
    ContainerBehaviour,
    ContainerRecord,
    ContainerRuntime,
    ImagePullError,
    IpExhausted,
    ProbeResult,
    ProbeSpec,
    Terminated,
    backoff_in_effect,
    backoff_next,
    parse_duration,
    pod_phase,
    probe_initial,
    probe_tick,
    should_restart,
    stop_plan,
)
from chaoskube.sim import World

# -- behaviours --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [("30s", 30.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("1.5s", 1.5), ("2.5", 2.5), ("0", 0.0), ("1m0.5s", 60.5)],
)
def test_parse_duration_reads_go_durations_and_plain_seconds(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "-1s", "10x", "5s garbage", "-3", "inf", "nan"])
def test_parse_duration_refuses_malformed_or_negative(text):
    with pytest.raises(BehaviourError):
        parse_duration(text)


def test_behaviour_reads_pod_annotations_with_per_container_overrides():
    annotations = {
        "chaoskube.io/exit-after": "60s",
        "chaoskube.io/exit-code": "3",
        "chaoskube.io/exit-after.sidecar": "5s",
        "chaoskube.io/fail-readiness-after": "30s",
        "chaoskube.io/shutdown-s": "4",
    }
    app = ContainerBehaviour.from_annotations(annotations, "app")
    sidecar = ContainerBehaviour.from_annotations(annotations, "sidecar")
    assert (app.exit_after_s, app.exit_code, app.fail_readiness_after_s, app.shutdown_s) == (60.0, 3, 30.0, 4.0)
    assert sidecar.exit_after_s == 5.0 and sidecar.exit_code == 3
    assert ContainerBehaviour.from_annotations({}, "app") == ContainerBehaviour()


@pytest.mark.parametrize("annotations", [{"chaoskube.io/exit-code": "one"}, {"chaoskube.io/exit-code": "300"}, {"chaoskube.io/ready-after": "soon"}])
def test_behaviour_refuses_bad_annotations(annotations):
    with pytest.raises(BehaviourError):
        ContainerBehaviour.from_annotations(annotations, "app")


def test_probe_results_follow_the_behaviour_over_time():
    behaviour = ContainerBehaviour(ready_after_s=5, fail_readiness_after_s=30, fail_liveness_after_s=60, started_after_s=2)
    table = [
        # running_for, startup, readiness, liveness
        (0.0, False, False, True),
        (2.0, True, False, True),
        (5.0, True, True, True),
        (29.9, True, True, True),
        (30.0, True, False, True),
        (60.0, True, False, False),
    ]
    for running_for, startup, readiness, liveness in table:
        got = tuple(behaviour.probe_succeeds(kind, running_for) for kind in ("startup", "readiness", "liveness"))
        assert got == (startup, readiness, liveness), running_for
    assert behaviour.hung(60.0) and not behaviour.hung(59.0)


@pytest.mark.parametrize("shutdown_s, grace_s, expected", [(1.0, 30.0, (1.0, 0)), (30.0, 30.0, (30.0, 0)), (50.0, 5.0, (5.0, 137)), (3.0, 0.0, (0.0, 137))])
def test_stop_plan_exits_cleanly_within_the_grace_period_else_sigkill(shutdown_s, grace_s, expected):
    assert stop_plan(ContainerBehaviour(shutdown_s=shutdown_s), grace_s) == expected


# -- probe worker ------------------------------------------------------------------------------


def tick(state, spec, *, succeeds, container_id="c1", running=True, started=True, running_for_s=100.0, deleting=False):
    return probe_tick(state, spec, container_id=container_id, running=running, started=started, running_for_s=running_for_s, deleting=deleting, succeeds=succeeds)


def test_probe_initial_values_are_upstreams():
    assert probe_initial("readiness").result is ProbeResult.FAILURE
    assert probe_initial("liveness").result is ProbeResult.SUCCESS
    assert probe_initial("startup").result is ProbeResult.UNKNOWN


def test_probe_spec_defaults_are_set_defaults_probe():
    spec = ProbeSpec.of(Probe())
    assert (spec.period_s, spec.timeout_s, spec.success_threshold, spec.failure_threshold, spec.initial_delay_s) == (10.0, 1.0, 1, 3, 0.0)
    custom = ProbeSpec.of(Probe(period_seconds=2, failure_threshold=5, success_threshold=2, initial_delay_seconds=7, termination_grace_period_seconds=4))
    assert (custom.period_s, custom.failure_threshold, custom.success_threshold, custom.initial_delay_s, custom.termination_grace_s) == (2.0, 5, 2, 7.0, 4.0)


def test_readiness_needs_success_threshold_in_a_row_and_failure_threshold_to_drop():
    spec = ProbeSpec(success_threshold=2, failure_threshold=3)
    state = probe_initial("readiness")
    results = []
    for succeeds in (True, False, True, True, False, False, True, False, False, False):
        state = tick(state, spec, succeeds=succeeds)
        results.append(state.result)
    S, F = ProbeResult.SUCCESS, ProbeResult.FAILURE
    assert results == [F, F, F, S, S, S, S, S, S, F]


def test_liveness_failure_puts_the_worker_on_hold_until_a_new_container():
    spec = ProbeSpec(failure_threshold=2)
    state = probe_initial("liveness")
    state = tick(state, spec, succeeds=False)
    assert state.result is ProbeResult.SUCCESS and not state.on_hold
    state = tick(state, spec, succeeds=False)
    assert state.result is ProbeResult.FAILURE and state.on_hold and state.run == 0
    held = tick(state, spec, succeeds=True)
    assert held == state  # on hold: nothing probed
    fresh = tick(state, spec, succeeds=True, container_id="c2")
    assert fresh.result is ProbeResult.SUCCESS and not fresh.on_hold and fresh.container_id == "c2"


def test_probes_wait_for_the_initial_delay_and_for_the_startup_probe():
    spec = ProbeSpec(initial_delay_s=10)
    readiness = probe_initial("readiness")
    assert tick(readiness, spec, succeeds=True, running_for_s=9.9).result is ProbeResult.FAILURE
    assert tick(readiness, spec, succeeds=True, running_for_s=10.0).result is ProbeResult.SUCCESS
    # not started yet: readiness and liveness are not run, startup is
    assert tick(readiness, ProbeSpec(), succeeds=True, started=False).result is ProbeResult.FAILURE
    startup = probe_initial("startup")
    assert tick(startup, ProbeSpec(), succeeds=True, started=False).result is ProbeResult.SUCCESS
    # once started, the startup worker stops probing
    done = tick(startup, ProbeSpec(), succeeds=False, started=True)
    assert done.result is ProbeResult.UNKNOWN


def test_a_container_that_is_not_running_fails_its_probes_and_deletion_quiets_liveness():
    spec = ProbeSpec()
    assert tick(probe_initial("readiness"), spec, succeeds=True, running=False).result is ProbeResult.FAILURE
    assert tick(probe_initial("liveness"), spec, succeeds=False, deleting=True).result is ProbeResult.SUCCESS
    assert tick(probe_initial("readiness"), spec, succeeds=True, container_id="") == probe_initial("readiness")


# -- CrashLoopBackOff --------------------------------------------------------------------------


def restart_waits(crashes, *, run_s=0.5, initial_s=10.0, max_s=300.0):
    """A container that exits ``run_s`` after each start: the wait before each restart."""
    entry, now, waits = None, 0.0, []
    for _ in range(crashes):
        finished = now + run_s
        now = finished
        while backoff_in_effect(entry, finished, now, max_s):
            now += 0.25
        waits.append(now - finished)
        entry = backoff_next(entry, finished, now, initial_s, max_s)
    return waits


def test_crash_loop_back_off_is_immediate_then_10s_doubling_to_300s():
    waits = restart_waits(9)
    assert waits == pytest.approx([0, 10, 20, 40, 80, 160, 300, 300, 300], abs=0.25)


def test_back_off_oracle_for_many_run_lengths():
    """Oracle: the first restart is free; then 10 s * 2^(k-1) capped at 300 s, unless the
    container ran more than 600 s (2 x max), which forgets the back-off every time."""
    for run_s in (0.5, 3.0, 25.0, 100.0, 700.0):
        waits = restart_waits(8, run_s=run_s)
        if run_s > 600:
            expected = [0.0] * 8
        else:
            expected = [0.0] + [min(10.0 * 2 ** (k - 1), 300.0) for k in range(1, 8)]
        assert waits == pytest.approx(expected, abs=0.25), run_s


def test_back_off_resets_after_running_longer_than_twice_the_maximum():
    entry = BackoffEntry(backoff_s=160.0, last_update=1000.0)
    assert backoff_in_effect(entry, 1100.0, 1100.0, 300.0)
    assert not backoff_in_effect(entry, 1000.0 + 601.0, 1601.0, 300.0)
    assert backoff_next(entry, 1601.0, 1601.0, 10.0, 300.0) == BackoffEntry(10.0, 1601.0)
    assert backoff_next(entry, 1100.0, 1260.0, 10.0, 300.0) == BackoffEntry(300.0, 1260.0)


# -- restart policy and phase ------------------------------------------------------------------


def done(code, cause=""):
    return Terminated(exit_code=code, reason="Completed" if code == 0 else "Error", started_at=0.0, finished_at=1.0, container_id="c", cause=cause)


@pytest.mark.parametrize(
    "policy, code, cause, restart",
    [
        ("Always", 0, "", True), ("Always", 1, "", True), ("", 0, "", True),
        ("OnFailure", 0, "", False), ("OnFailure", 2, "", True), ("OnFailure", 0, "liveness", True),
        ("Never", 1, "", False), ("Never", 0, "liveness", False),
    ],
)
def test_should_restart_follows_the_restart_policy(policy, code, cause, restart):
    assert should_restart(policy, done(code, cause)) is restart


@pytest.mark.parametrize(
    "policy, running, codes, waiting, terminal, phase",
    [
        ("Always", 0, [], 1, False, "Pending"),
        ("Always", 1, [], 0, False, "Running"),
        ("Always", 1, [1], 0, False, "Running"),
        ("Always", 0, [1], 0, False, "Running"),
        ("Always", 0, [0, 0], 0, True, "Succeeded"),
        ("Always", 0, [0, 137], 0, True, "Failed"),
        ("OnFailure", 0, [0], 0, False, "Succeeded"),
        ("OnFailure", 0, [1], 0, False, "Running"),
        ("Never", 0, [0, 1], 0, False, "Failed"),
        ("Never", 0, [0, 0], 0, False, "Succeeded"),
        ("Never", 1, [1], 0, False, "Running"),
        ("Always", 0, [-1], 0, False, "Running"),
    ],
)
def test_pod_phase_is_get_phase(policy, running, codes, waiting, terminal, phase):
    assert pod_phase(policy, running, codes, waiting, 0, terminal=terminal) == phase


def test_container_record_state_is_a_function_of_time():
    record = ContainerRecord(name="app", container_id="c", image="x", restart_count=0, started_at=10.0, exit_at=40.0, exit_code=2)
    assert record.running(39.9) and record.terminated(39.9) is None
    terminated = record.terminated(40.0)
    assert (terminated.exit_code, terminated.reason, terminated.started_at, terminated.finished_at) == (2, "Error", 10.0, 40.0)
    assert ContainerRecord(name="app", container_id="c", image="x", restart_count=0, started_at=0.0).running(1e9)


# -- the shell, on a process's disk ------------------------------------------------------------


def pod(uid, name="p", *, host_network=False):
    return Pod(metadata=ObjectMeta(name=name, namespace="default", uid=uid), spec=PodSpec(containers=[Container(name="app", image="app:1")], host_network=host_network))


def run_with_runtime(story, *, cidr="10.244.1.0/29", config=None):
    world = World(3)
    box = {}

    async def node(process):
        runtime = ContainerRuntime(process, node="node-1", pod_cidr=cidr, config=config or KubeletConfig())
        box["result"] = await story(process, runtime)

    async def main(world):
        world.spawn("node-1", node)
        while "result" not in box:
            await world.sleep(1.0)
        return box["result"]

    return world.run(main)


def test_ips_are_handed_out_after_the_last_one_wrapping_and_reused_when_free():
    async def story(process, runtime):
        ips = []
        for index in range(5):  # a /29 has .2 .. .6 for pods
            ips.append((await runtime.run_pod_sandbox(pod(f"u{index}"), host_ip="10.0.0.1", grace_s=30)).ip)
        with pytest.raises(IpExhausted):
            await runtime.run_pod_sandbox(pod("u9"), host_ip="10.0.0.1", grace_s=30)
        runtime.stop_pod_sandbox("u1")
        again = (await runtime.run_pod_sandbox(pod("u5"), host_ip="10.0.0.1", grace_s=30)).ip
        host = (await runtime.run_pod_sandbox(pod("u6", host_network=True), host_ip="10.0.0.1", grace_s=30)).ip
        return ips, again, host, runtime.sandbox_by_ip(again).uid

    ips, again, host, owner = run_with_runtime(story)
    assert ips == [f"10.244.1.{n}" for n in range(2, 7)]
    assert again == "10.244.1.3" and owner == "u5"
    assert host == "10.0.0.1"


def test_image_pulls_are_cached_per_node_serialized_and_follow_the_pull_policy():
    async def story(process, runtime):
        started = process.now()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.pull_image, "a:1", "IfNotPresent")
            nursery.start_soon(runtime.pull_image, "b:1", "IfNotPresent")
        both = process.now() - started
        cached = await runtime.pull_image("a:1", "IfNotPresent")
        always = await runtime.pull_image("a:1", "Always")
        with pytest.raises(ImagePullError) as never:
            await runtime.pull_image("c:1", "Never")
        return both, cached, always, never.value.reason, runtime.images(), runtime.pulls

    both, cached, always, reason, images, pulls = run_with_runtime(story, config=KubeletConfig(image_pull_s=2.0))
    assert both == pytest.approx(4.0, abs=0.01)  # serializeImagePulls: one after the other
    assert (cached, always, reason) == (False, True, "ErrImageNeverPull")
    assert images == ("a:1", "b:1") and pulls == 3


def test_containers_survive_a_kill_of_their_process_on_its_disk():
    world = World(5)
    seen = {}

    async def node(process):
        runtime = ContainerRuntime(process, node="node-1", pod_cidr="10.244.1.0/24", config=KubeletConfig())
        if process.incarnation == 1:
            await runtime.run_pod_sandbox(pod("u1"), host_ip="10.0.0.1", grace_s=30)
            await runtime.start_container("u1", Container(name="app", image="app:1"), ContainerBehaviour(exit_after_s=20, exit_code=3), restart_count=0, last=None)
            await process.sleep(1000)
        seen["record"] = runtime.sandbox("u1").container("app")
        seen["now"] = process.now()

    async def main(world):
        process = world.spawn("node-1", node)
        await world.sleep(5)
        process.kill()
        await world.sleep(30)
        process.restart()
        await world.sleep(1)

    world.run(main)
    record, now = seen["record"], seen["now"]
    assert record.started_at == pytest.approx(1.0, abs=0.01)  # sandbox 0.5 s + start 0.5 s
    terminated = record.terminated(now)
    assert terminated is not None and terminated.exit_code == 3
    assert terminated.finished_at == pytest.approx(21.0, abs=0.01)  # happened while the kubelet was down

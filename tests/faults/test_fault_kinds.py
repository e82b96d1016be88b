"""Applying and healing every fault kind on a live world; healing is idempotent."""

import pytest
import trio

from chaoskube.faults import KINDS, Context, FaultInjector, ProcessInfo, ScheduledFault
from chaoskube.faults.kinds import TARGET_ROLES
from chaoskube.sim import State, World


async def idle(process):
    await trio.sleep_forever()


def context_of(world):
    def build():
        infos = [ProcessInfo(p.name, p.role, p.zone) for p in world.processes.values()]
        return Context(infos, lambda role: "n1" if role == "db" else None)

    return build


# Kinds that act on a component inside a process of a given role (a kubelet, a webhook
# server) or through the system's API: tests/faults/test_cluster_fault_kinds.py covers them.
COMPONENT_KINDS = set(TARGET_ROLES)


@pytest.mark.parametrize("kind", sorted(set(KINDS) - COMPONENT_KINDS))
def test_every_kind_applies_and_heals_idempotently(kind):
    observations = {}

    async def main(world):
        for index in (1, 2, 3):
            world.spawn(f"n{index}", idle, role="db")
        injector = FaultInjector(world, context_of(world))
        active = injector.inject(kind, "leader:db")
        assert active is not None
        observations["during"] = snapshot(world)
        injector.heal(active)
        observations["healed"] = snapshot(world)
        injector.heal(active)
        injector.heal_all()
        observations["again"] = snapshot(world)
        await world.sleep(1)

    World(1).run(main)
    assert observations["during"] != observations["healed"] or kind in ("clock-jump",)
    assert observations["healed"] == observations["again"]
    healed = observations["healed"]
    assert healed["states"] == {"n1": "running", "n2": "running", "n3": "running"}
    assert healed["grudge"] == {}
    assert healed["links"] == {}
    assert healed["fsync"] == {"n1": 0.001, "n2": 0.001, "n3": 0.001}
    assert healed["skip_fsync"] == {"n1": False, "n2": False, "n3": False}


def snapshot(world):
    return {
        "states": {name: p.state.value for name, p in sorted(world.processes.items())},
        "grudge": {dst: sorted(s) for dst, s in world.network.grudge.items()},
        "links": {f"{s}->{d}": profile for (s, d), profile in world.network._links.items() if profile is not None},
        "fsync": {name: p.disk.fsync_latency_s for name, p in sorted(world.processes.items())},
        "skip_fsync": {name: p.disk.skip_fsync for name, p in sorted(world.processes.items())},
        "clock": {name: (round(p.clock_offset, 6), p._rate) for name, p in sorted(world.processes.items())},
    }


def test_schedule_applies_and_heals_at_the_right_times():
    async def main(world):
        for index in (1, 2, 3):
            world.spawn(f"n{index}", idle, role="db")
        injector = FaultInjector(world, context_of(world))
        injector.schedule(
            [
                ScheduledFault(at_s=2.0, kind="kill", target="name:n2", duration_s=3.0),
                ScheduledFault(at_s=1.0, kind="pause", target="name:n3"),
            ],
            origin_s=world.now,
        )
        await world.sleep(2.5)
        assert world.process("n2").state is State.STOPPED
        assert world.process("n3").state is State.PAUSED
        await world.sleep(3)
        assert world.process("n2").state is State.RUNNING
        assert world.process("n3").state is State.PAUSED  # no duration: until the heal phase
        injector.heal_all()
        assert world.process("n3").state is State.RUNNING

    world = World(1)
    world.run(main)
    faults = [(e["t"], e["event"], e["kind"]) for e in world.journal.of_type("fault")]
    assert faults == [(1.0, "apply", "pause"), (2.0, "apply", "kill"), (5.0, "heal", "kill"), (5.5, "heal", "pause")]


def test_target_matching_nothing_is_skipped_and_journaled():
    async def main(world):
        world.spawn("n1", idle, role="db")
        assert FaultInjector(world, context_of(world)).inject("kill", "leader:web") is None

    world = World(1)
    world.run(main)
    [event] = world.journal.of_type("fault")
    assert event["event"] == "skip" and "no process matches" in event["note"]


def test_scheduled_fault_validates_eagerly():
    from chaoskube.faults import FaultError

    with pytest.raises(FaultError):
        ScheduledFault(at_s=-1, kind="kill", target="name:n1")
    with pytest.raises(FaultError):
        ScheduledFault(at_s=1, kind="kill", target="name:n1", duration_s=0)


def test_overlapping_faults_heal_in_any_order():
    """Two link faults and two partitions on the same processes, healed oldest first."""

    async def main(world):
        for index in (1, 2, 3):
            world.spawn(f"n{index}", idle, role="db")
        injector = FaultInjector(world, context_of(world))
        delay = injector.inject("link-delay", "name:n1", {"delay_ms": 100})
        loss = injector.inject("link-loss", "name:n1", {"loss": 0.5})
        assert world.network.link("n1", "n2").delay_s == 0.1 and world.network.link("n1", "n2").loss == 0.5
        injector.heal(delay)  # the loss stays, the delay goes
        assert world.network.link("n1", "n2").delay_s == world.network.default.delay_s
        assert world.network.link("n1", "n2").loss == 0.5
        isolated = injector.inject("isolate", "name:n1")
        split = injector.inject("split", "role:db", {"leader_in": "minority"})  # n1 is the "leader"
        injector.heal(isolated)  # the split still cuts n1 off
        assert world.network.cut("n2", "n1") and world.network.cut("n1", "n3")
        paused_twice = [injector.inject("pause", "name:n2"), injector.inject("pause", "name:n2")]
        injector.heal(paused_twice[0])
        assert world.process("n2").paused  # still paused by the other fault
        slow = [injector.inject("slow-disk", "name:n3", {"fsync_ms": 500}), injector.inject("slow-disk", "name:n3", {"fsync_ms": 50})]
        injector.heal(slow[0])
        assert world.process("n3").disk.fsync_latency_s == 0.05
        kills = [injector.inject("kill", "name:n3"), injector.inject("kill", "name:n3")]
        injector.heal(kills[0])
        assert not world.process("n3").alive  # the other kill keeps it down
        injector.heal_all()
        assert world.network.grudge == {} and world.network._links == {}
        assert all(process.running for process in world.processes.values())
        assert world.process("n3").disk.fsync_latency_s == 0.001
        await world.sleep(1)

    World(1).run(main)


def test_clock_faults_compose_and_heal_to_true_time():
    async def main(world):
        world.spawn("n1", idle, role="db")
        injector = FaultInjector(world, context_of(world))
        first = injector.inject("clock-jump", "name:n1", {"seconds": 30})
        second = injector.inject("clock-jump", "name:n1", {"seconds": 10})
        assert world.process("n1").clock_offset == pytest.approx(40)
        injector.heal(first)
        assert world.process("n1").clock_offset == pytest.approx(10)
        injector.heal(second)
        assert world.process("n1").clock_offset == 0

    World(1).run(main)

"""Processes: kill/restart (disk kept, memory lost), pause/resume, clock skew, disks."""

import pytest
import trio

from chaoskube.sim import State, World
from chaoskube.sim.process import Wake


def test_kill_loses_memory_restart_keeps_the_disk():
    seen = []

    async def counter(process):
        boots = process.disk.read("boots", 0) + 1
        process.disk.write("boots", boots)
        await process.disk.fsync(process)
        memory = []  # lost on kill
        while True:
            memory.append(process.now())
            seen.append((process.incarnation, boots, len(memory)))
            await process.sleep(1)

    async def main(world):
        process = world.spawn("p", counter)
        await world.sleep(2.5)
        process.kill()
        assert process.state is State.STOPPED
        await world.sleep(1)
        process.restart()
        await world.sleep(1.5)

    World(1).run(main)
    assert seen[:3] == [(1, 1, 1), (1, 1, 2), (1, 1, 3)]
    assert seen[3:] == [(2, 2, 1), (2, 2, 2)]


def test_killed_process_receives_nothing_and_its_timers_never_fire():
    fired = []

    async def sleeper(process):
        await process.sleep(5)
        fired.append(process.incarnation)

    async def main(world):
        process = world.spawn("p", sleeper)
        await world.sleep(1)
        process.kill()
        process.kill()  # idempotent
        await world.sleep(10)

    World(1).run(main)
    assert fired == []


def test_pause_freezes_timers_and_delivery_then_time_jumps_on_resume():
    log = []

    async def worker(process):
        async def listen():
            while True:
                message = await process.receive()
                log.append(("got", message.body, process.now()))

        process.start_soon(listen)
        while True:
            await process.sleep(1)
            log.append(("tick", process.now()))

    async def main(world):
        target = world.spawn("p", worker)
        other = world.spawn("q", lambda p: trio.sleep_forever())
        await world.sleep(1.5)
        target.pause()
        other.send("p", "while paused")
        await world.sleep(10)  # paused from 1.5 to 11.5
        target.resume()
        await world.sleep(1.2)

    World(1).run(main)
    assert log[0] == ("tick", 1.0)
    # Nothing happens while paused; on resume the overdue tick and the held message arrive
    # at once, at 11.5, and the next tick is one second later.
    assert ("tick", 2.0) not in log
    assert sorted(log[1:3]) == [("got", "while paused", 11.5), ("tick", 11.5)]
    assert log[3] == ("tick", 12.5)


def test_clock_offset_and_drift():
    readings = []

    async def reader(process):
        while True:
            readings.append(round(process.now(), 6))
            await process.sleep(1)

    async def main(world):
        process = world.spawn("p", reader)
        await world.sleep(2.5)
        process.jump_clock(100)  # wall clock jumps forward
        await world.sleep(1)
        process.set_drift(1.0)  # runs twice as fast: sleep(1) takes 0.5 s of world time
        await world.sleep(2)

    World(1).run(main)
    assert readings[:3] == [0.0, 1.0, 2.0]
    # the sleep under way is not shortened by the jump; afterwards now() reads +100
    assert readings[3] == 103.0
    # drift 1.0 from world t=3.5 (local 103.5): at world 4.0 the clock reads 104.5, and
    # from then on each sleep(1) of local time takes 0.5 s of world time
    assert readings[4:8] == [104.5, 105.5, 106.5, 107.5]


def test_exited_process_is_journaled_and_can_be_restarted():
    async def short(process):
        await process.sleep(1)

    async def main(world):
        process = world.spawn("p", short)
        await world.sleep(2)
        assert process.state is State.EXITED
        process.restart()
        await world.sleep(2)

    world = World(1)
    world.run(main)
    events = [e["event"] for e in world.journal.of_type("process")]
    assert events == ["start", "exit", "restart", "exit"]


def test_duplicate_process_names_are_refused():
    async def main(world):
        world.spawn("p", lambda p: trio.sleep_forever())
        with pytest.raises(ValueError, match="already exists"):
            world.spawn("p", lambda p: trio.sleep_forever())

    World(1).run(main)


# -- disks ---------------------------------------------------------------------------------


def disk_scenario(lose_unsynced):
    observed = {}

    async def writer(process):
        if process.incarnation == 1:
            process.disk.write("synced", 1)
            await process.disk.fsync(process)
            process.disk.write("unsynced", 2)
            process.disk.delete("synced")  # an unsynced delete
            assert process.disk.read("unsynced") == 2  # visible before fsync
            assert process.disk.read("synced") is None
            await trio.sleep_forever()
        observed["after"] = {"synced": process.disk.read("synced"), "unsynced": process.disk.read("unsynced")}
        await trio.sleep_forever()

    async def main(world):
        process = world.spawn("p", writer)
        process.disk.lose_unsynced_on_crash = lose_unsynced
        await world.sleep(1)
        observed["lost"] = process.kill()
        process.restart()
        await world.sleep(1)

    World(1).run(main)
    return observed


def test_crash_keeps_unsynced_writes_by_default():
    observed = disk_scenario(lose_unsynced=False)
    assert observed == {"lost": 0, "after": {"synced": None, "unsynced": 2}}


def test_crash_loses_unsynced_writes_when_that_fault_is_on():
    observed = disk_scenario(lose_unsynced=True)
    assert observed == {"lost": 2, "after": {"synced": 1, "unsynced": None}}


def test_fsync_takes_its_latency_and_syncs_only_earlier_writes():
    times = []

    async def writer(process):
        process.disk.fsync_latency_s = 0.25
        process.disk.write("a", 1)

        async def late_write():
            await process.sleep(0.1)
            process.disk.write("b", 2)  # issued during the fsync

        process.start_soon(late_write)
        await process.disk.fsync(process)
        times.append(process.now())
        times.append(process.disk.unsynced)
        await trio.sleep_forever()

    async def main(world):
        world.spawn("p", writer)
        await world.sleep(1)

    World(1).run(main)
    assert times == [0.25, 1]


def test_paused_process_stalls_its_fsync():
    done = []

    async def writer(process):
        process.disk.write("a", 1)
        await process.disk.fsync(process)
        done.append(process.now())

    async def main(world):
        process = world.spawn("p", writer)
        process.disk.fsync_latency_s = 0.01
        process.pause()
        await world.sleep(3)
        process.resume()
        await world.sleep(1)

    World(1).run(main)
    assert done == [3.0]


def test_disk_keys_and_items_are_sorted():
    from chaoskube.sim import Disk

    disk = Disk("x")
    for key in ("b/2", "a/1", "b/1"):
        disk.write(key, key.upper())
    disk.delete("a/1")
    assert disk.keys() == ["b/1", "b/2"]
    assert list(disk.items("b/")) == [("b/1", "B/1"), ("b/2", "B/2")]


def test_move_on_after_stops_while_paused():
    ended = []

    async def waiter(process):
        with process.move_on_after(2) as scope:
            await trio.sleep_forever()
        ended.append((process.world.now, scope.cancelled_caught))

    async def main(world):
        process = world.spawn("p", waiter)
        await world.sleep(1)
        process.pause()
        await world.sleep(5)
        process.resume()
        await world.sleep(5)

    World(1).run(main)
    assert ended == [(6.0, True)]


def test_wait_wake_ends_when_set_or_at_its_bound_which_stops_while_paused():
    log = []

    async def waiter(process):
        for bound in (2, 2, 2):
            wake = Wake()
            process.labels["wake"] = wake
            if bound == 2 and not log:
                wake.set()  # set before the wait: answers at once
            woken = await process.wait_wake(wake, bound)
            log.append((process.world.now, woken))
        await trio.sleep_forever()

    async def main(world):
        process = world.spawn("p", waiter)
        await world.sleep(1)
        process.labels["wake"].set()  # the second wait, at t=1
        await world.sleep(1.5)  # the third wait's bound (t=3) falls in a pause
        process.pause()
        await world.sleep(2)
        process.resume()  # paused from t=2.5 to 4.5: the held bound fires at resume
        await world.sleep(5)
        process.labels["wake"].set()  # after the bound: wakes nothing
        process.kill()

    World(1).run(main)
    assert log == [(0.0, True), (1.0, True), (4.5, False)]


def test_call_later_is_held_while_paused_and_dropped_after_kill():
    fired = []

    async def main(world):
        process = world.spawn("p", lambda p: trio.sleep_forever())
        await world.sleep(0.1)
        process.call_later(1, fired.append, "a")
        process.pause()
        await world.sleep(3)
        process.resume()  # "a" was due at 1.1: it fires now, at 3.1
        await world.sleep(0)
        process.call_later(1, fired.append, "b")
        process.kill()  # "b" is dropped with the process's memory
        await world.sleep(3)
        fired.append(world.now)

    World(1).run(main)
    assert fired == ["a", 6.1]


def test_on_message_handles_deliveries_without_a_task():
    seen = []

    async def server(process):
        process.on_message("rpc", lambda message: process.reply(message, message.body * 2))
        await trio.sleep_forever()

    async def client(process):
        seen.append(await process.call("server", 21, port="rpc", timeout_s=1))

    async def main(world):
        world.spawn("server", server)
        await world.sleep(0.01)
        world.spawn("client", client)
        await world.sleep(1)

    World(1).run(main)
    assert [outcome.value for outcome in seen] == [42]


def test_a_killed_process_runs_no_further_step_even_if_woken_in_the_same_instant():
    after_kill = []

    async def writer(process):
        process.disk.write("a", 1)
        await process.disk.fsync(process)  # due at 0.001, the instant of the kill
        process.disk.write("b", 2)
        after_kill.append(process.incarnation)

    async def main(world):
        process = world.spawn("p", writer)
        process.disk.lose_unsynced_on_crash = True
        world.call_at(0.001, lambda _: process.kill())
        await world.sleep(1)
        return process.disk.read("b")

    assert World(1).run(main) is None
    assert after_kill == []


def test_sends_of_the_step_ending_at_a_pause_are_held_until_resume():
    got = []

    async def receiver(process):
        while True:
            got.append(((await process.receive()).body, process.world.now))

    async def sender(process):
        await process.sleep(1)
        process.send("r", "x")  # at t=1, the instant of the pause

    async def main(world):
        world.spawn("r", receiver)
        process = world.spawn("s", sender)
        world.call_at(1.0, lambda _: process.pause())
        await world.sleep(3)
        process.resume()
        await world.sleep(1)

    World(1).run(main)
    assert [body for body, _ in got] == ["x"]
    assert got[0][1] > 3.0

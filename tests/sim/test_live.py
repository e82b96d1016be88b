"""Live mode: virtual time paced to the wall clock, real I/O waking tasks, and the
lifecycle observers the HTTP front and the operator supervisor hang on processes."""

from __future__ import annotations

import time

import trio

from chaoskube.sim import World


def test_virtual_time_runs_free_until_live_then_at_wall_speed():
    world = World(1)

    async def main(world: World) -> tuple[float, float]:
        started = time.monotonic()
        await world.sleep(300.0)  # not live: as fast as it computes
        free = time.monotonic() - started
        world.go_live()
        started = time.monotonic()
        await world.sleep(0.3)
        return free, time.monotonic() - started

    free, paced = world.run(main)
    assert free < 0.5
    assert 0.28 <= paced < 1.0
    assert any(event["type"] == "world" and event.get("event") == "live" for event in world.journal.events)


def test_real_io_wakes_a_task_while_the_world_waits():
    world = World(1)

    async def main(world: World) -> tuple[float, float]:
        world.go_live()
        a, b = trio.socket.socketpair()
        with a, b:
            async def later() -> None:
                await trio.sleep(0.2)  # a Trio deadline, in paced virtual time
                await a.send(b"x")

            world.start_soon(later)
            started = time.monotonic()
            assert await b.recv(1) == b"x"
            world.catch_up()
            return time.monotonic() - started, world.now

    waited, now = world.run(main)
    assert 0.18 <= waited < 1.0 and 0.18 <= now < 1.0


def test_catch_up_never_passes_an_event_still_due():
    wall = [100.0]
    world = World(1)

    async def main(world: World) -> list[float]:
        world.go_live(clock=lambda: wall[0])
        fired: list[float] = []
        world.call_later(5.0, lambda _: fired.append(world.now))
        wall[0] += 10.0  # the wall clock ran ahead (a slow machine, a long I/O wait)
        world.catch_up()
        assert world.now == 5.0  # up to the event, not past it
        await world.sleep(1.0)
        return fired

    assert world.run(main) == [5.0]
    assert world.pacer.max_lag_s >= 0.0


def test_process_observers_see_every_transition():
    world = World(1)
    seen: list[str] = []

    async def idle(process):
        await trio.sleep_forever()

    async def main(world: World) -> None:
        process = world.spawn("p", idle)
        process.observe(lambda process, event: seen.append(event))
        await world.sleep(1)
        process.pause()
        process.resume()
        process.kill()
        process.start()
        await world.sleep(1)

    world.run(main)
    assert seen == ["pause", "resume", "kill", "restart"]

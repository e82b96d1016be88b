"""The World's livelock watchdog: a run whose virtual time stands still, or whose journal
outgrows its budget, ends with Livelock and a ``livelock`` journal event saying where it
stuck; an ordinary run is untouched."""

from __future__ import annotations

import pytest

from chaoskube.sim import Journal, Livelock, Watchdog, World


def test_a_zero_delay_loop_ends_with_livelock_and_says_where():
    world = World(1, watchdog=Watchdog(max_events_per_instant=50_000))

    async def main(world):
        def again(_):
            world.call_later(0.0, again)

        world.call_later(1.0, again)
        await world.sleep(10.0)

    with pytest.raises(Livelock) as caught:
        world.run(main)
    assert "virtual time stood still at t=1.000000" in caught.value.reason
    assert caught.value.where["busiest_callbacks"][0][0].endswith("again")
    last = world.journal.events[-1]
    assert last["type"] == "livelock" and last["events_at_this_instant"] == 50_000


def test_events_a_millisecond_apart_reset_the_count():
    """Virtual time that moves by 1 ms or more is progress: 10,000 steps of 1 ms stay
    under a bound of 5,000 events per instant."""
    world = World(1, watchdog=Watchdog(max_events_per_instant=5_000))

    async def main(world):
        for _ in range(10_000):
            await world.sleep(0.001)

    world.run(main)
    assert world.livelock is None


def test_the_journal_budget_ends_a_run_whose_time_advances():
    world = World(1, journal=Journal(None), watchdog=Watchdog(max_journal_bytes=20_000))

    async def main(world):
        while True:
            world.record("chatter", payload="x" * 100)
            await world.sleep(0.01)

    with pytest.raises(Livelock) as caught:
        world.run(main)
    assert "journal passed 20,000 bytes" in caught.value.reason


def test_the_wall_clock_bound_ends_a_run_when_asked():
    world = World(1, watchdog=Watchdog(max_events_per_instant=None, max_wall_s=0.05))

    async def main(world):
        def again(_):
            world.call_later(0.0, again)

        world.call_later(0.0, again)
        await world.sleep(1.0)

    with pytest.raises(Livelock) as caught:
        world.run(main)
    assert "wall-clock" in caught.value.reason


def test_an_ordinary_run_is_not_disturbed():
    world = World(3, watchdog=Watchdog(max_events_per_instant=1_000))

    async def main(world):
        for _ in range(5_000):
            await world.sleep(0.01)
        return "done"

    assert world.run(main) == "done"
    assert world.livelock is None

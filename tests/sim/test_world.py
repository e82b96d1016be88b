"""The World: virtual time, ordering, the random tree, Trio compatibility, stuck runs."""

import math

import pytest
import trio

from chaoskube.sim import Journal, SimulationStuck, World, derive_seed


def run(main, seed=1):
    world = World(seed)
    return world, world.run(main)


def test_time_is_virtual_and_exact():
    async def main(world):
        await world.sleep(600)  # ten simulated minutes
        return world.now, trio.current_time()

    _, (now, trio_now) = run(main)
    assert now == 600.0
    assert trio_now == pytest.approx(600.0)


def test_callbacks_run_in_time_then_sequence_order():
    order = []

    async def main(world):
        world.call_at(2.0, order.append, "c")
        world.call_at(1.0, order.append, "a")
        world.call_at(1.0, order.append, "b")  # same instant: scheduled later, runs later
        world.call_at(0.5, order.append, "first")
        await world.sleep(3)

    run(main)
    assert order == ["first", "a", "b", "c"]


def test_call_in_the_past_runs_now():
    seen = []

    async def main(world):
        await world.sleep(5)
        world.call_at(1.0, lambda _: seen.append(world.now))
        await world.sleep(1)

    run(main)
    assert seen == [5.0]


def test_trio_sleep_and_fail_after_use_virtual_time():
    async def main(world):
        await trio.sleep(3)
        with trio.move_on_after(2) as scope:
            await world.sleep(10)
        return world.now, scope.cancelled_caught

    _, (now, cancelled) = run(main)
    assert now == 5.0
    assert cancelled


def test_trio_deadline_before_world_event_fires_at_its_own_time():
    seen = []

    async def main(world):
        async def trio_sleeper():
            await trio.sleep(1.5)
            seen.append(("trio", world.now))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio_sleeper)
            await world.sleep(4)
            seen.append(("world", world.now))

    run(main)
    assert seen == [("trio", 1.5), ("world", 4.0)]


def test_stuck_run_is_reported_with_the_time():
    async def main(world):
        await world.sleep(2)
        await trio.Event().wait()  # nobody will ever set it

    with pytest.raises(SimulationStuck, match=r"t=2\.000000s"):
        run(main)


def test_component_exception_propagates_plainly():
    async def broken(process):
        await process.sleep(1)
        raise ValueError("bug in a component")

    async def main(world):
        world.spawn("p", broken)
        await world.sleep(5)

    with pytest.raises(ValueError, match="bug in a component"):
        run(main)


def test_random_tree_is_named_stable_and_independent():
    first, second = World(7), World(7)
    a1 = [first.random("a").random() for _ in range(3)]
    first.random("b").random()  # another consumer does not shift "a"
    a2 = [second.random("a").random() for _ in range(3)]
    assert a1 == a2
    assert first.random("a") is first.random("a")
    assert World(8).random("a").random() != World(7).random("a").random()
    assert derive_seed(7, "a") == derive_seed(7, "a") != derive_seed(7, "b")


def test_seed_must_be_an_int():
    with pytest.raises(TypeError):
        World("7")


def test_journal_lines_are_sorted_json_with_virtual_time(tmp_path):
    path = tmp_path / "journal.jsonl"

    async def main(world):
        await world.sleep(1.25)
        world.record("note", zebra=1, alpha=2)

    world = World(3, journal=path)
    world.run(main)
    lines = path.read_text().splitlines()
    assert lines[-2] == '{"alpha":2,"t":1.25,"type":"note","zebra":1}'
    assert all(line.startswith("{") for line in lines)
    import hashlib

    assert hashlib.sha256(path.read_bytes()).hexdigest() == world.fingerprint


def test_journal_keeps_what_was_recorded_when_the_run_fails(tmp_path):
    path = tmp_path / "journal.jsonl"

    async def main(world):
        world.record("before-crash")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        World(3, journal=path).run(main)
    assert "before-crash" in path.read_text()


def test_network_events_stay_on_disk_not_in_memory():
    journal = Journal(None)

    async def ping(process):
        process.send("b", "x")

    async def main(world):
        world.spawn("a", ping)
        world.spawn("b", lambda p: trio.sleep_forever())
        await world.sleep(1)

    World(1, journal=journal).run(main)
    assert journal.count > len(journal.events)
    assert not journal.of_type("send", "deliver")


def test_same_seed_same_fingerprint_different_seed_different():
    async def chatter(process):
        rng = process.random()
        for _ in range(20):
            await process.sleep(rng.random())
            process.send(rng.choice(["a", "b", "c"]), "hi")

    async def main(world):
        for name in "abc":
            world.spawn(name, chatter)
        await world.sleep(30)

    def fingerprint(seed):
        world = World(seed)
        world.run(main)
        return world.fingerprint

    assert fingerprint(4) == fingerprint(4)
    assert len({fingerprint(4), fingerprint(5), fingerprint(6)}) == 3


def test_inf_is_not_a_valid_sleep_target():
    assert math.isinf(math.inf)  # guard for the stuck check's sentinel


def test_exception_in_a_message_handler_fails_the_run_plainly():
    async def server(process):
        def handle(message):
            raise RuntimeError("handler bug")

        process.on_message("", handle)
        await trio.sleep_forever()

    async def main(world):
        world.spawn("server", server)
        await world.sleep(0.1)
        world.spawn("client", lambda p: trio.sleep_forever()).send("server", "x")
        await world.sleep(1)

    with pytest.raises(RuntimeError, match="handler bug"):
        run(main)

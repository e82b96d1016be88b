"""A scenario full of timer ties, run as a script by test_determinism_guard.py.

Prints the journal fingerprint. Ties everywhere: every process sleeps the same durations
(world-heap ties), helper tasks use trio.sleep with identical deadlines (Trio deadline
ties, which Trio orders by id(cancel_scope)), and every wake-up is journaled together
with a set-iteration of strings (whose order varies with PYTHONHASHSEED unless sorted).
"""

import sys

import trio

from chaoskube.sim import World


async def node(process):
    async def trio_ticker(index):
        for _ in range(5):
            await trio.sleep(0.25)  # identical Trio deadlines across tasks
            process.world.record("trio-tick", process=process.name, index=index)

    async with trio.open_nursery() as nursery:
        for index in range(3):
            nursery.start_soon(trio_ticker, index)
        for step in range(5):
            await process.sleep(0.25)  # identical world deadlines across processes
            process.world.record("tick", process=process.name, step=step)
            for peer in sorted({"n0", "n1", "n2", "n3"} - {process.name}):
                process.send(peer, step)


async def main(world):
    for index in range(4):
        world.spawn(f"n{index}", node)
    await world.sleep(5)


if __name__ == "__main__":
    world = World(int(sys.argv[1]))
    world.run(main)
    print(world.fingerprint)

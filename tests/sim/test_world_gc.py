"""World.run and the cyclic garbage collector: what a run made stays frozen after it (the
caller's collections do not rescan it), and the next run unfreezes and collects the
garbage of the earlier one before it starts; the caller's GC thresholds come back."""

import gc
import weakref

from chaoskube.sim import World
from chaoskube.sim.world import RUN_GC_THRESHOLDS


class _Node:
    def __init__(self) -> None:
        self.other: object = None


def test_garbage_of_a_run_is_frozen_after_it_and_collected_when_the_next_run_starts():
    thresholds = gc.get_threshold()
    seen = {}

    async def main(world):
        seen["thresholds"] = gc.get_threshold()
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a reference cycle: only the cyclic GC can free it
        world.cycle = a
        seen["ref"] = weakref.ref(a)

    world = World(1)
    world.run(main)
    assert seen["thresholds"] == RUN_GC_THRESHOLDS
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() > 0
    del world
    gc.collect()
    assert seen["ref"]() is not None, "frozen until the next World.run"

    async def nothing(world):
        seen["during"] = seen["ref"]()

    World(2).run(nothing)
    assert seen["during"] is None, "the next run collected the earlier run's cycle before it started"
    assert gc.get_threshold() == thresholds

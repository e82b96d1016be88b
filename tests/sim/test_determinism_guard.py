"""Guards for the private Trio names chaoskube/sim/determinism.py relies on.

If a Trio upgrade breaks the deterministic-scheduling recipe or the virtual-time hook,
these fail loudly (see the docstring of chaoskube.sim.determinism)."""

import os
import subprocess
import sys
from pathlib import Path

import trio

from chaoskube.sim import World

SCENARIO = Path(__file__).with_name("determinism_scenario.py")
ROOT = Path(__file__).resolve().parents[2]


def fingerprint_in_subprocess(seed: int, hash_seed: str) -> str:
    environment = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, str(SCENARIO), str(seed)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=True,
    )
    return result.stdout.strip()


def test_timer_ties_replay_identically_across_processes():
    first = fingerprint_in_subprocess(11, "1")
    second = fingerprint_in_subprocess(11, "2")
    assert len(first) == 64
    assert first == second


def test_different_seeds_order_ties_differently():
    assert fingerprint_in_subprocess(11, "0") != fingerprint_in_subprocess(12, "0")


def test_virtual_time_hook_is_what_moves_time():
    async def main(world):
        await world.sleep(42)
        return world.events_run, trio.current_time()

    events, trio_now = World(1).run(main)
    assert events >= 1
    assert trio_now == 42.0

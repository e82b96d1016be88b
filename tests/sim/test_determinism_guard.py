"""Guards for the private Trio names chaoskube/sim/determinism.py relies on.

If a Trio upgrade breaks the deterministic-scheduling recipe or the virtual-time hook,
these fail loudly (see the docstring of chaoskube.sim.determinism)."""

import collections
import os
import subprocess
import sys
from pathlib import Path

import trio

from chaoskube.sim import World, determinism

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


class CountingEpoll:
    def __init__(self):
        self.polls = []

    def poll(self, timeout, maxevents):
        self.polls.append(timeout)
        return []


class EntryQueue:
    def __init__(self):
        self.queue = collections.deque()
        self.idempotent_queue = {}


def test_thin_polls_make_one_non_blocking_poll_in_poll_every():
    epoll, entries = CountingEpoll(), EntryQueue()
    thin = determinism._ThinPolls(epoll, entries)
    for _ in range(2 * determinism.POLL_EVERY):
        assert thin.poll(0, 1) == []
    assert epoll.polls == [0, 0]
    thin.poll(0.5, 1)  # a poll that may block is always made
    entries.queue.append((print, ()))  # and so is one while the entry queue holds work
    thin.poll(0, 1)
    entries.queue.clear()
    entries.idempotent_queue[(print, ())] = None
    thin.poll(0, 1)
    assert epoll.polls == [0, 0, 0.5, 0, 0]


def test_run_sync_soon_runs_before_virtual_time_moves():
    """Trio's entry queue (async generator finalizers, signals) wakes its task through a
    socket; with most polls skipped, it must still run at the instant it was queued."""

    async def main(world):
        seen = []
        trio.lowlevel.current_trio_token().run_sync_soon(lambda: seen.append(world.now))
        await world.sleep(1.0)
        return seen

    assert World(1).run(main) == [0.0]

"""Boot seed and run seed in the runtime: reseeding the random tree, the quiescent point,
and a run forked there (docs/campaigns.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from chaoskube.sim import Journal, World
from chaoskube.sim.determinism import isolate_forked_run
from chaoskube.sim.randomness import RandomTree, derive_seed

sys.path.insert(0, str(Path(__file__).parent))
from determinism_scenario import node  # noqa: E402


def test_reseed_restarts_every_generator_in_place_from_the_new_seed():
    tree = RandomTree(7)
    kept = tree("network")
    boot_draws = [kept.random() for _ in range(3)]
    assert boot_draws[0] == RandomTree(7)("network").random()  # the first stage draws as always
    tree.reseed(9, "run")
    assert tree("network") is kept  # the component's generator, re-seeded in place
    run_draws = [kept.random() for _ in range(3)]
    fresh = RandomTree(9)
    fresh.reseed(9, "run")
    assert run_draws == [fresh("network").random() for _ in range(3)]
    assert tree("later").random() == fresh("later").random()  # generators asked for later too
    # A run seed equal to the boot seed does not replay the boot's draws.
    same = RandomTree(7)
    same("network").random()
    same.reseed(7, "run")
    assert same("network").random() != boot_draws[0]
    assert derive_seed(7, "run/network") != derive_seed(7, "network")
    with pytest.raises(AssertionError):
        same.reseed(8, "run")  # one stage after the boot


def scenario(path: Path, fork: bool, boot_seed: int = 5, run_seed: int = 99) -> str | None:
    """The determinism scenario's processes; at 0.6 s (mid-scenario), reseed at a quiescent point (in a
    forked child when ``fork``, which goes on into ``path``)."""
    seen: dict[str, object] = {}

    async def main(world: World) -> None:
        for index in range(4):
            world.spawn(f"n{index}", node)
        await world.sleep(0.6)

        def switch() -> None:
            seen["now"], seen["blocked"] = world.now, True
            if fork:
                world.journal.flush()  # before forking (Journal.redirect)
                pid = os.fork()
                if pid:  # the booted parent: wait for the child, leave with its status
                    _, status = os.waitpid(pid, 0)
                    os._exit(os.waitstatus_to_exitcode(status))
                isolate_forked_run()
                world.journal.redirect(path)
            world.reseed(run_seed)

        await world.wait_quiescent(switch)
        assert world.now == seen["now"] == 0.6  # the same instant
        await world.sleep(3)

    world = World(boot_seed, journal=Journal(path.with_suffix(".boot") if fork else path))
    world.run(main)
    return world.fingerprint


def test_a_run_forked_at_the_quiescent_point_writes_the_unforked_journal(tmp_path):
    unforked = tmp_path / "unforked.jsonl"
    fingerprint = scenario(unforked, fork=False)
    forked = tmp_path / "forked.jsonl"
    pid = os.fork()
    if pid == 0:  # keep pytest's process out of it: the scenario forks again inside its run
        try:
            scenario(forked, fork=True)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert forked.read_bytes() == unforked.read_bytes()
    lines = unforked.read_bytes().splitlines()
    assert b'"event":"reseed","seed":99' in b"".join(lines) and len(fingerprint) == 64
    # The boot part is the boot seed's alone; the run part depends on the run seed.
    other = tmp_path / "other.jsonl"
    scenario(other, fork=False, run_seed=100)
    split = next(index for index, line in enumerate(lines) if b'"reseed"' in line)
    other_lines = other.read_bytes().splitlines()
    assert other_lines[:split] == lines[:split]
    assert other_lines[split + 1 :] != lines[split + 1 :]
    third = tmp_path / "third.jsonl"
    scenario(third, fork=False, boot_seed=6)
    assert third.read_bytes().splitlines()[:split] != lines[:split]


def test_wait_quiescent_runs_after_everything_due_at_this_instant():
    order: list[str] = []

    async def main(world: World) -> None:
        world.call_later(0.0, lambda _: order.append("due now"))
        world.call_later(1.0, lambda _: order.append("later"))
        await world.wait_quiescent(lambda: order.append("quiescent"))
        order.append("after")
        await world.sleep(2.0)

    World(1).run(main)
    assert order == ["due now", "quiescent", "after", "later"]

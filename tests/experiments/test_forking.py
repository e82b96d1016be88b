"""Boot once, fork per seed (experiments/forking.py, docs/campaigns.md): forked runs write
the journals of unforked runs, byte for byte; the boot seed is the boot's alone; a boot
that fails, a run that dies and a booter that dies give error records, never a hang."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaoskube.experiments import registry
from chaoskube.experiments.campaign import plan_jobs, replay_run, run_campaign
from chaoskube.experiments.forking import ForkPool
from chaoskube.experiments.runner import run_experiment
from chaoskube.sim import Journal, World


@pytest.mark.parametrize("name", ["etcd-leader-kill", "controller-manager-leader-kill"])
def test_forked_runs_write_byte_for_byte_the_journals_of_unforked_runs(name, tmp_path):
    experiment = registry.find(name)
    jobs = plan_jobs([(name, experiment)], [1, 2, 3], tmp_path / "campaign")
    campaign = run_campaign(jobs, 2)
    assert [record["error"] for record in campaign.records] == [None, None, None]
    assert [record["as_expected"] for record in campaign.records] == [True, True, True]
    for record in campaign.records:
        single = run_experiment(experiment, record["seed"], tmp_path / f"single-{record['seed']}")
        forked = Path(record["out_dir"])
        assert (forked / "journal.jsonl").read_bytes() == (single.out_dir / "journal.jsonl").read_bytes()
        assert (forked / "run.log").read_bytes() == (single.out_dir / "run.log").read_bytes()
        assert record["journal_sha256"] == single.journal_sha256
        assert record["boot_seed"] == 0 == json.loads((forked / "result.json").read_text())["boot_seed"]
    assert len({record["journal_sha256"] for record in campaign.records}) == 3
    assert not list((tmp_path / "campaign").glob(".boot-*")), "the boot's scratch directory is removed"


def test_seeds_share_the_boot_and_the_boot_seed_changes_it(tmp_path):
    experiment = registry.find("etcd-leader-kill")

    def lines(seed, boot_seed=None):
        result = run_experiment(experiment, seed, tmp_path / f"{seed}-{boot_seed}", boot_seed=boot_seed)
        return (result.out_dir / "journal.jsonl").read_bytes().splitlines(), result

    one, _ = lines(1)
    two, _ = lines(2)
    boot = next(index for index, line in enumerate(one) if b'"event":"reseed"' in line)
    assert one[:boot] == two[:boot] and one[boot] != two[boot]
    assert one[0] == b'{"event":"start","seed":0,"t":0.0,"type":"world"}'
    other, result = lines(1, boot_seed=7)
    assert other[:boot] != one[:boot]
    assert "--boot-seed 7" in result.replay and json.loads((result.out_dir / "result.json").read_text())["boot_seed"] == 7
    replayed = replay_run(result.out_dir)
    assert replayed.match, (replayed.recorded, replayed.replayed)


def test_no_fork_runs_each_seed_whole_with_the_same_journals(tmp_path):
    experiment = registry.find("etcd-leader-kill")
    forked = run_campaign(plan_jobs([("etcd-leader-kill", experiment)], [4, 5], tmp_path / "forked"), 2)
    whole = run_campaign(plan_jobs([("etcd-leader-kill", experiment)], [4, 5], tmp_path / "whole"), 2, fork=False)
    assert [r["journal_sha256"] for r in forked.records] == [r["journal_sha256"] for r in whole.records]


# -- failures, with a small group of our own ----------------------------------------------------


@dataclass(frozen=True)
class Job:
    out_dir: str
    seed: int
    name: str = "toy"


@dataclass(frozen=True)
class ToyGroup:
    """Boots a tiny world and forks at 0.5 s; can fail its boot, kill a run, or die."""

    fail_boot: bool = False
    die_on_seed: int | None = None
    booter_dies: bool = False

    def forkable(self) -> bool:
        return True

    def boot(self, scratch, fork):
        from chaoskube.experiments.simulated import RunTarget

        scratch.mkdir(parents=True, exist_ok=True)
        target = RunTarget(0, scratch)

        async def main(world):
            await world.sleep(0.5)
            if self.fail_boot:
                raise RuntimeError("the cluster never came up")
            if self.booter_dies:
                os.kill(os.getpid(), signal.SIGKILL)

            def switch():
                world.journal.flush()
                fork(world, target)
                world.journal.redirect(target.out / "journal.jsonl")
                world.reseed(target.seed)

            await world.wait_quiescent(switch)
            if target.seed == self.die_on_seed:
                os._exit(3)
            await world.sleep(world.random("x").random())

        world = World(1, journal=Journal(scratch / "journal.jsonl"))
        world.run(main)
        return world.fingerprint

    def finish(self, job, outcome, seconds):
        return {"seed": job.seed, "fingerprint": outcome, "error": None}

    def run(self, job):
        return {"seed": job.seed, "fingerprint": "whole", "error": None}

    def error(self, job, message):
        return {"seed": job.seed, "fingerprint": None, "error": message}


def run_pool(group, tmp_path, seeds=(1, 2, 3)):
    jobs = [Job(str(tmp_path / f"toy-{seed}"), seed) for seed in seeds]
    pool = ForkPool([(group, jobs)], 2, tmp_path / "scratch")
    records = []
    try:
        while not pool.finished:
            records += [record for _, record in pool.wait()]
    finally:
        pool.close()
    return sorted(records, key=lambda record: record["seed"])


def test_toy_group_forks_a_child_per_seed(tmp_path):
    records = run_pool(ToyGroup(), tmp_path)
    assert [record["error"] for record in records] == [None, None, None]
    assert len({record["fingerprint"] for record in records}) == 3
    assert all((tmp_path / f"toy-{seed}" / "journal.jsonl").is_file() for seed in (1, 2, 3))


def test_a_boot_that_fails_fails_every_seed_of_its_group_without_running_them(tmp_path):
    records = run_pool(ToyGroup(fail_boot=True), tmp_path)
    assert [record["error"] for record in records] == ["the boot failed: RuntimeError: the cluster never came up"] * 3
    assert not (tmp_path / "toy-1").exists()


def test_a_run_that_dies_is_an_error_record_and_the_others_finish(tmp_path):
    records = run_pool(ToyGroup(die_on_seed=2), tmp_path)
    assert records[1]["error"] == "the run's process died (exit status 3)"
    assert records[0]["error"] is None and records[2]["error"] is None


def test_a_booter_that_dies_fails_its_jobs(tmp_path):
    records = run_pool(ToyGroup(booter_dies=True), tmp_path)
    assert all(record["error"].startswith("the booter process died") for record in records), records

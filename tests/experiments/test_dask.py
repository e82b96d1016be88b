"""`chaoskube explore --dask`: a campaign on a Dask scheduler and two workers on loopback
(experiments/dask_campaign.py). Same records and fingerprints as a local campaign and as
`chaoskube run`; a worker lost mid-campaign has its chunk run again elsewhere, and
nothing is counted twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

from chaoskube.experiments import registry  # noqa: E402
from chaoskube.experiments.campaign import plan_jobs, run_campaign  # noqa: E402
from chaoskube.experiments.dask_campaign import DaskAddressError, DaskPool, chunks  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: What differs between two campaigns of the same runs: wall times, the process count,
#: where the run directories are.
TIMING = {"wall_seconds", "jobs", "job_seconds", "out_dir"}


def comparable(value):
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items() if key not in TIMING}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


@pytest.fixture
def dask_cluster(tmp_path):
    """A scheduler and two single-threaded workers (no nanny: a killed worker stays
    dead), all on 127.0.0.1; yields (address, worker processes)."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT), DASK_DISTRIBUTED__WORKER__DAEMON="False")
    scheduler_file = tmp_path / "scheduler.json"
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment,
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1", "--no-dashboard", "--local-directory", str(tmp_path / f"worker-{index}")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment,
            )
            for index in range(2)
        ]  # fmt: skip
        started += workers
        with distributed.Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield address, workers
    finally:
        for process in reversed(started):
            if process.poll() is None:
                process.terminate()
        for process in started:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def test_a_dask_campaign_matches_the_local_one_and_survives_a_lost_worker(dask_cluster, tmp_path):
    address, workers = dask_cluster
    out = tmp_path / "dask"
    argv = [sys.executable, "-m", "chaoskube.experiments.cli", "explore", "etcd-leader-kill", "--seeds", "1..8", "--dask", address, "--out", str(out)]
    campaign = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200"))
    # Kill the first worker seen running a chunk (its booter is a child process): under
    # load the scheduler may hand the first chunk to either worker.
    watched = [psutil.Process(worker.pid) for worker in workers]
    deadline = time.monotonic() + 120
    busy = []
    while not busy and time.monotonic() < deadline and campaign.poll() is None:
        busy = [index for index, process in enumerate(watched) if process.children(recursive=True)]
        if not busy:
            time.sleep(0.02)
    killed = bool(busy)
    workers[busy[0] if busy else 0].send_signal(signal.SIGKILL)
    stdout, stderr = campaign.communicate(timeout=300)
    assert campaign.returncode == 0, stderr + stdout
    assert killed, "the worker never ran a chunk"
    assert "8 of 8 runs as expected (8 planned)" in stdout
    dask_summary = json.loads((out / "summary.json").read_text())
    assert [run["seed"] for run in dask_summary["runs"]] == list(range(1, 9))  # each once
    # The same campaign run locally: the same summary, but for wall times and places.
    experiment = registry.find("etcd-leader-kill")
    local = subprocess.run(
        [sys.executable, "-m", "chaoskube.experiments.cli", "explore", "etcd-leader-kill", "--seeds", "1..8", "--jobs", "2", "--out", str(tmp_path / "local")],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    local_summary = json.loads((tmp_path / "local" / "summary.json").read_text())
    assert comparable(dask_summary) == comparable(local_summary)
    # Every shipped run directory is whole and its journal is the one `chaoskube run` writes.
    for run in dask_summary["runs"]:
        directory = Path(run["out_dir"])
        assert directory.parent == out
        recorded = json.loads((directory / "result.json").read_text())
        assert recorded["journal_sha256"] == run["journal_sha256"]
        from chaoskube.sim import journal_sha256

        assert journal_sha256(directory / "journal.jsonl") == run["journal_sha256"]
    from chaoskube.experiments.runner import run_experiment

    single = run_experiment(experiment, 5, tmp_path / "single")
    assert dask_summary["runs"][4]["journal_sha256"] == single.journal_sha256


def test_local_n_starts_and_stops_its_own_cluster(tmp_path):
    experiment = registry.find("etcd-leader-kill")
    jobs = plan_jobs([("etcd-leader-kill", experiment)], [1, 2, 3], tmp_path / "out")
    pool = DaskPool.connect("local:2", jobs)
    assert pool.workers == 2
    result = run_campaign(jobs, 2, pool=pool)
    assert [record["seed"] for record in result.records] == [1, 2, 3]
    assert all(record["error"] is None and record["as_expected"] for record in result.records)
    assert pool.cluster is None  # closed with the campaign
    assert all((tmp_path / "out" / f"etcd-leader-kill-seed{seed}" / "report.html").is_file() for seed in (1, 2, 3))


def test_chunks_keep_groups_apart_and_seeds_in_order():
    groups = [("a", list(range(10))), ("b", list(range(3)))]
    assert chunks(groups, threads=2) == [("a", [0, 1, 2, 3]), ("a", [4, 5, 6, 7]), ("a", [8, 9]), ("b", [0, 1, 2])]
    assert chunks(groups, threads=2, chunk=5) == [("a", [0, 1, 2, 3, 4]), ("a", [5, 6, 7, 8, 9]), ("b", [0, 1, 2])]


@pytest.mark.parametrize(("address", "message"), [("foo", "expected tcp://HOST:PORT"), ("local:0", "1..256"), ("tcp://127.0.0.1:9", "cannot reach a Dask scheduler")])
def test_bad_addresses_are_one_line(address, message):
    with pytest.raises(DaskAddressError) as error:
        DaskPool.connect(address, [], timeout_s=2.0)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_shipped_run_directory_records_the_directory_asked_for(tmp_path):
    """Issue 32: a run made on a worker (into its scratch directory) and shipped back named
    the scratch directory in its replay command; it names OUT/NAME-seedN, as a local
    campaign's run does. run_chunk is what a Dask worker runs (here in this process)."""
    from chaoskube.experiments.campaign import boot_groups
    from chaoskube.experiments.dask_campaign import run_chunk, unpack

    out = tmp_path / "out"
    jobs = plan_jobs([("etcd-leader-kill", registry.find("etcd-leader-kill"))], [2], out)
    ((group, chunk),) = chunks(boot_groups(jobs), threads=1)
    ((out_dir, record, archive),) = run_chunk(group, chunk, fork=True)
    assert out_dir == str(out / "etcd-leader-kill-seed2") and archive is not None
    unpack(archive, Path(out_dir))
    expected = f"chaoskube run etcd-leader-kill --seed 2 --out {out_dir}"
    recorded = json.loads((Path(out_dir) / "result.json").read_text())
    assert recorded["replay"] == expected and recorded["journal_sha256"] == record["journal_sha256"]
    assert f"- Replay: `{expected}`" in (Path(out_dir) / "report.md").read_text()
    for name in ("report.html", "junit.xml", "report.md", "result.json"):
        assert "chaoskube-dask-" not in (Path(out_dir) / name).read_text(), name

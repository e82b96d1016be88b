"""Campaigns on a Dask cluster: ``chaoskube explore ... --dask ADDRESS`` (docs/campaigns.md).

``ADDRESS`` is ``tcp://HOST:PORT`` (a running Dask scheduler, e.g. one made by the Dask
Kubernetes operator) or ``local:N`` (a ``distributed.LocalCluster`` of N single-threaded
worker processes on loopback, started and stopped with the campaign).

Contract (the same as a local campaign's, campaign.py):

- The jobs are grouped by boot (``campaign.boot_groups``) and each group is cut into
  *chunks* of consecutive seeds. A chunk is one Dask task (:func:`run_chunk`): on its
  worker it starts a fresh booter process (a new interpreter: a Dask worker holds
  threads and may be a daemon process, so it neither forks nor starts
  ``multiprocessing`` children itself), boots once and forks a child per seed, exactly
  as a local campaign does (forking.py). Every journal is therefore byte for byte the
  one ``chaoskube run NAME --seed N`` writes, whichever worker ran it.
- Each task returns its records and, for each record the ``keep`` policy accepts, the
  run directory as a gzipped tar; the client unpacks it into ``OUT/NAME-seedN`` and sets
  the record's ``out_dir`` there. Workers need not share a file system with the client.
  The replay command's ``--out`` in the shipped ``result.json`` and reports names the
  directory the user asked for, not the worker's scratch directory
  (:func:`_record_requested_out`).
- At most as many tasks are handed to the scheduler as the cluster has worker threads
  (asked again before every hand-out, so a cluster that grows is used); the rest wait
  here, so ``--fail-fast`` and Ctrl-C never have to take back queued work.
- A worker lost mid-task: the scheduler runs the task again on another worker (Dask
  reschedules the tasks of a lost worker); its records count once, when its future
  finishes, since only a finished future is read. A task that keeps killing workers
  (``distributed.scheduler.allowed-failures``) ends in an error record per job.
- Ctrl-C cancels the tasks in flight; their jobs are *abandoned*. A cluster that cannot
  be reached raises :class:`DaskAddressError` (one line).

The summary is the local campaign's (campaign.summarize over the same records): same
verdicts, fingerprints and figures; only wall times and ``jobs`` differ.
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chaoskube.experiments.forking import ForkPool, Group

#: Seeds per task at most: a boot is shared by this many runs, and a lost worker costs
#: at most this many runs again.
MAX_CHUNK = 25
_LOCAL = re.compile(r"^local:(\d+)$")
_TCP = re.compile(r"^(tcp|tls)://[^\s/:]+:\d+$")


class DaskAddressError(ValueError):
    """``--dask`` names no cluster that can be used; ``str(error)`` is one line."""


def keep_all(record: dict[str, Any]) -> bool:
    return True


# -- on the worker ------------------------------------------------------------------------------


def run_chunk(group: Group, jobs: Sequence[Any], fork: bool, keep: Callable[[dict[str, Any]], bool] = keep_all) -> list[tuple[str, dict[str, Any], bytes | None]]:
    """A Dask task: the ``jobs`` of one boot group, booted once and forked per seed in a
    fresh booter on this worker, into a scratch directory. Returns, per job in order,
    (the client's ``out_dir``, the record, the run directory as tar.gz or None)."""
    scratch = Path(tempfile.mkdtemp(prefix="chaoskube-dask-"))
    try:
        local = [dataclasses.replace(job, out_dir=str(scratch / Path(job.out_dir).name)) for job in jobs]
        origin = {job.out_dir: original for job, original in zip(local, jobs, strict=True)}
        pool = ForkPool([(group, local)], 1, scratch / ".boot", fork=fork, launcher="subprocess")
        finished: dict[str, dict[str, Any]] = {}
        try:
            while not pool.finished:
                for job, record in pool.wait():
                    finished[job.out_dir] = record
        finally:
            pool.close()
        results = []
        for job in local:
            record = finished[job.out_dir]
            directory = Path(job.out_dir)
            keep_it = directory.is_dir() and keep(record)
            if keep_it:
                _record_requested_out(directory, origin[job.out_dir].out_dir)
            archive = _pack(directory) if keep_it else None
            results.append((origin[job.out_dir].out_dir, record | {"out_dir": origin[job.out_dir].out_dir}, archive))
        return results
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _record_requested_out(directory: Path, requested: str) -> None:
    """The run in ``directory`` (the worker's scratch) as if written to ``requested``, the
    directory the user asked for: its replay command's ``--out`` names ``requested`` in
    result.json, report.md, report.html and junit.xml (made again from result.json and the
    journal, as ``chaoskube report`` makes them; nothing else in them names the directory).
    A directory without a readable result (a run that failed to start) is left as it is."""
    from chaoskube.experiments.campaign import NotARun
    from chaoskube.experiments.rerender import load_result
    from chaoskube.experiments.reports import write_result

    try:
        result = load_result(directory)
    except (NotARun, OSError, ValueError, KeyError):
        return
    if result.mode != "simulated":
        return
    replay = dataclasses.replace(result, out_dir=Path(requested), recorded_replay=None).replay
    if replay != result.replay:
        write_result(dataclasses.replace(result, recorded_replay=replay))


def _pack(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
        archive.add(directory, arcname=directory.name)
    return buffer.getvalue()


def unpack(archive: bytes, out_dir: Path) -> None:
    """Unpack a run directory shipped by :func:`run_chunk` into ``out_dir`` (replacing
    what a lost attempt may have left there)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=".unpack-") as staging, tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(staging, filter="data")
        (unpacked,) = Path(staging).iterdir()
        unpacked.rename(out_dir)


# -- in the client --------------------------------------------------------------------------------


def chunks(groups: Sequence[tuple[Group, Sequence[Any]]], threads: int, chunk: int | None = None) -> list[tuple[Group, list[Any]]]:
    """Each group cut into runs of consecutive seeds: ``chunk`` seeds each, or by
    default about two chunks per worker thread (so a lost worker or a slow chunk costs
    little), at most :data:`MAX_CHUNK`."""
    total = sum(len(jobs) for _, jobs in groups)
    size = chunk or max(1, min(MAX_CHUNK, math.ceil(total / max(1, 2 * threads))))
    return [(group, list(jobs[start : start + size])) for group, jobs in groups for start in range(0, len(jobs), size)]


class DaskPool:
    """The engine of a Dask campaign, with forking.ForkPool's interface for run_campaign."""

    def __init__(self, client: Any, cluster: Any, address: str, tasks: list[tuple[Group, list[Any]]], fork: bool, keep: Callable[[dict[str, Any]], bool]) -> None:
        self.client = client
        self.cluster = cluster  # a LocalCluster we started (closed with the pool), or None
        self.address = address
        self.queue = list(reversed(tasks))  # pop() hands them out in order
        self.fork = fork
        self.keep = keep
        self.in_flight: dict[Any, tuple[Group, list[Any]]] = {}  # future -> its group and jobs
        self.not_started = 0

    @classmethod
    def connect(
        cls, address: str, jobs: Sequence[Any], *, fork: bool = True, chunk: int | None = None, keep: Callable[[dict[str, Any]], bool] = keep_all, timeout_s: float = 10.0
    ) -> DaskPool:
        """A pool on the cluster at ``address`` (module doc) for ``jobs``."""
        from chaoskube.experiments.campaign import boot_groups

        try:
            import distributed
        except ImportError:
            raise DaskAddressError("--dask: the `distributed` package is not installed (pip install distributed)") from None
        cluster = None
        local = _LOCAL.match(address)
        if local is not None:
            workers = int(local.group(1))
            if not 1 <= workers <= 256:
                raise DaskAddressError(f"--dask {address}: the number of local workers must be 1..256")
            import logging

            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
        elif _TCP.match(address):
            try:
                client = distributed.Client(address, timeout=f"{timeout_s}s")
            except OSError as error:
                raise DaskAddressError(f"--dask {address}: cannot reach a Dask scheduler there ({error}); start one (`dask scheduler`) or check the address") from None
        else:
            raise DaskAddressError(f"--dask {address!r}: expected tcp://HOST:PORT (a Dask scheduler) or local:N (N local workers)")
        pool = cls(client, cluster, client.scheduler.address, [], fork, keep)
        pool.queue = list(reversed(chunks(boot_groups(jobs), pool.workers, chunk)))
        return pool

    @property
    def workers(self) -> int:
        """Worker threads the cluster has now."""
        return sum(self.client.nthreads().values())

    @property
    def finished(self) -> bool:
        return not self.queue and not self.in_flight

    def _dispatch(self) -> None:
        width = max(1, self.workers)
        while self.queue and len(self.in_flight) < width:
            group, jobs = self.queue.pop()
            # pure=False: a task run again after a lost worker is the same future, never a twin
            future = self.client.submit(run_chunk, group, jobs, self.fork, self.keep, pure=False, retries=0)
            self.in_flight[future] = (group, jobs)

    def wait(self) -> list[tuple[Any, dict[str, Any]]]:
        import distributed

        self._dispatch()
        if not self.in_flight:
            return []
        done, _ = distributed.wait(list(self.in_flight), return_when="FIRST_COMPLETED")
        records: list[tuple[Any, dict[str, Any]]] = []
        for future in sorted(done, key=lambda item: (self.in_flight[item][1][0].name, self.in_flight[item][1][0].seed)):
            group, jobs = self.in_flight.pop(future)
            try:
                results = future.result()
            except Exception as error:  # noqa: BLE001 - a task that failed on every worker it met
                records += [(job, group.error(job, f"the Dask task failed: {type(error).__name__}: {error}")) for job in jobs]
                continue
            by_dir = {job.out_dir: job for job in jobs}
            for out_dir, record, archive in results:
                if archive is not None:
                    unpack(archive, Path(out_dir))
                records.append((by_dir[out_dir], record))
        self._dispatch()
        return records

    def stop_starting(self) -> None:
        self.not_started += sum(len(jobs) for _, jobs in self.queue)
        self.queue.clear()

    def abort(self) -> list[Any]:
        running = [job for _, jobs in self.in_flight.values() for job in jobs]
        self.stop_starting()
        if self.in_flight:
            self.client.cancel(list(self.in_flight), force=True)
        self.in_flight.clear()
        return running

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None

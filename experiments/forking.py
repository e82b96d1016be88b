"""Boot once, fork per seed: the process pool of a local campaign (and of each Dask task).

A *group* is a set of jobs that share one boot: the same experiment (target, gallery
variants, manifests) and the same boot seed, differing only in their run seed. For each
group the pool starts one *booter* process. The booter runs the experiment up to the end
of its boot (``phases``: ``booted``) and, at that quiescent point between two virtual
instants, serves the pool: for every job the pool hands it, it ``os.fork()``s a child
that reseeds the random tree and Trio's scheduler from the job's run seed and runs the
rest of the experiment into the job's directory (``simulated.run_simulated``'s ``fork``
hook). The child's journal is byte for byte what ``chaoskube run NAME --seed N`` writes
(``tests/experiments/test_forking.py`` compares them). A group whose system cannot be
forked there (a saved Hypothesis example) or a pool made with ``fork=False`` runs every
job whole in a child forked from a booter that did not boot; so does a group whose boot
ended without reaching its end (the livelock watchdog tripped in the boot: each seed then
gets its own ``livelock`` verdict).

Contract of the pool (:class:`ForkPool`):

- At most ``width`` processes compute at once: each running child, and each booter
  while it boots. A booter waits, idle, while its children run; groups are booted in
  order, the next one as soon as a slot is free, so one group's children overlap the
  next one's boot.
- Records come back as the children finish (:meth:`ForkPool.wait`). A boot that fails
  (the experiment raised during its boot, which every seed would hit the same way) gives
  every job of its group an error record without running it; a child or a booter that
  dies gives an error record for each job it had.
- Booters and their children ignore SIGINT and live in their own process group:
  :meth:`ForkPool.abort` (the campaign's Ctrl-C) kills each group at once and returns the
  jobs that were running (their directories keep a partial journal). A booter whose
  pool is gone (its command pipe closes) kills its children and exits.
- Nothing here knows what a job or a record is: a group (:class:`Group`) says how to
  boot, finish, run whole and fail a job; a job needs ``out_dir`` and ``seed``.

Why fork and not a snapshot: the booted state is a live Trio run (tasks suspended in
``await``), which nothing can serialize; a fork copies it whole, copy-on-write, in
milliseconds. The cost is that the pool needs ``os.fork`` (POSIX) and a booter with no
threads: booters are started by ``forkserver`` (never forked from the campaign process,
which may hold threads), and a Dask task starts a fresh booter process the same way.
"""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.connection
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from chaoskube.experiments.simulated import RunTarget
from chaoskube.sim import World
from chaoskube.sim.determinism import isolate_forked_run


class Job(Protocol):
    @property
    def out_dir(self) -> str: ...

    @property
    def seed(self) -> int: ...


class Group(Protocol):
    """What the pool needs of a group of jobs (picklable: it is sent to the booter)."""

    def forkable(self) -> bool:
        """Whether the group's runs can be forked at the end of a shared boot."""
        ...

    def boot(self, scratch: Path, fork: Callable[[World, RunTarget], None]) -> Any:
        """Boot into ``scratch`` with ``fork`` as the run's fork hook; returns only in a
        child, with what :meth:`finish` needs."""
        ...

    def finish(self, job: Any, outcome: Any, seconds: float) -> dict[str, Any]:
        """In a child: the record of ``job`` from what :meth:`boot` returned; ``seconds``
        of wall time since the fork."""
        ...

    # Optional: ``prepare(job, target)``, called in a child right after the fork with the
    # run's RunTarget (seed and directory set): a guided campaign's mutant sets
    # ``target.experiment`` there (campaign.BootGroup.prepare).

    def run(self, job: Any) -> dict[str, Any]:
        """The record of ``job`` run whole (no shared boot)."""
        ...

    def error(self, job: Any, message: str) -> dict[str, Any]:
        """The record of a job that could not run."""
        ...


# -- the booter process ------------------------------------------------------------------------


def booter_main(conn: multiprocessing.connection.Connection, group: Group, scratch: str, fork: bool) -> None:
    """The booter (module doc). Never returns: every process that runs this ends in
    ``os._exit`` (the booter when its pool says stop, each child after sending its record)."""
    os.setpgrp()  # its own process group: the pool kills a booter and its children at once
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING", format="{level}: {message}")
    server = _Server(conn, group, Path(scratch))
    try:
        try:
            forkable = fork and group.forkable()
        except Exception as error:  # noqa: BLE001 - the group's jobs fail, not the campaign
            server.boot_failed(f"{type(error).__name__}: {error}")
        if forkable:
            server.started = (time.perf_counter(), time.process_time())
            try:
                outcome = group.boot(Path(scratch) / "boot", server.fork)
            except BaseException as error:  # noqa: BLE001
                if server.job is not None:
                    raise
                server.boot_failed(f"{type(error).__name__}: {error}")
            if server.job is None:
                # The run ended before its boot did (the livelock watchdog ended it in the
                # boot): nothing to fork; each job runs whole, and says so in its own record.
                conn.send(("booted", time.perf_counter() - server.started[0], time.process_time() - server.started[1]))
                record = group.run(server.serve())
            else:
                record = group.finish(server.job, outcome, time.perf_counter() - server.forked_at)
        else:
            conn.send(("booted", 0.0, 0.0))
            record = group.run(server.serve())
        server.send_record(record)
    except BaseException as error:  # noqa: BLE001 - a child reports it; the booter has no one to tell
        if server.job is not None:
            server.send_record(group.error(server.job, f"{type(error).__name__}: {error}"))
    finally:
        os._exit(0)


@dataclass
class _Server:
    """The booter's side of the protocol, and then each child's."""

    conn: multiprocessing.connection.Connection
    group: Group
    scratch: Path
    job: Any = None  # set in a child: the job it runs
    writer: multiprocessing.connection.Connection | None = None  # a child's pipe for its record
    started: tuple[float, float] = (0.0, 0.0)
    forked_at: float = 0.0

    def boot_failed(self, message: str) -> None:
        self.conn.send(("boot-failed", message))
        self._exit()

    def fork(self, world: World, target: RunTarget) -> None:
        """The run's fork hook: tell the pool the boot is done and serve it; returns in
        each child, with the child's seed and directory in ``target``."""
        enabled = gc.isenabled()
        gc.disable()  # no collection in the booter between forks: every child starts alike
        self.conn.send(("booted", time.perf_counter() - self.started[0], time.process_time() - self.started[1]))
        job = self.serve()
        if enabled:
            gc.enable()
        isolate_forked_run()
        Path(job.out_dir).mkdir(parents=True, exist_ok=True)
        target.seed, target.out, target.forked = job.seed, Path(job.out_dir), True
        prepare = getattr(self.group, "prepare", None)
        if prepare is not None:  # optional: what else the child's run takes from its job
            prepare(job, target)
        target.started, target.cpu_started = time.perf_counter(), time.process_time()
        self.forked_at = target.started

    def serve(self) -> Any:
        """Fork a child per job the pool sends until it says stop; returns in a child."""
        children: dict[multiprocessing.connection.Connection, tuple[int, Any]] = {}
        stopping = False
        while not stopping or children:
            ready = multiprocessing.connection.wait(([] if stopping else [self.conn]) + list(children))
            for item in ready:
                if item is self.conn:
                    try:
                        message = self.conn.recv()
                    except (EOFError, OSError):  # the pool is gone: nobody wants these runs
                        for pid, _ in children.values():
                            _kill(pid)
                        os._exit(1)
                    if message[0] == "stop":
                        stopping = True
                        continue
                    job = message[1]
                    reader, writer = multiprocessing.Pipe(duplex=False)
                    pid = os.fork()
                    if pid == 0:  # the child: it runs ``job``
                        for other in children:
                            other.close()
                        reader.close()
                        self.conn.close()
                        self.job, self.writer = job, writer
                        return job
                    writer.close()
                    children[reader] = (pid, job)
                else:
                    assert isinstance(item, multiprocessing.connection.Connection)
                    pid, job = children.pop(item)
                    try:
                        record = item.recv()
                    except (EOFError, OSError):
                        record = None
                    item.close()
                    _, status = os.waitpid(pid, 0)
                    if record is None:
                        record = self.group.error(job, f"the run's process died ({_describe(status)})")
                    self.conn.send(("record", job.out_dir, record))
        self._exit()

    def send_record(self, record: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.send(record)
        self.writer.close()

    def _exit(self) -> None:
        """The booter is done: report the CPU it and its (reaped) children used, leave."""
        shutil.rmtree(self.scratch, ignore_errors=True)
        used = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            used += usage.ru_utime + usage.ru_stime
        try:
            self.conn.send(("cpu", used))
        except OSError:
            pass
        self.conn.close()
        os._exit(0)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def booter_from_fd(fd: int) -> None:
    """Entry point of a booter started as a fresh interpreter (``launcher="subprocess"``,
    as in a Dask worker, whose processes may not start ``multiprocessing`` children): the
    pool's end of the pipe is descriptor ``fd``; its first message is what
    :func:`booter_main` takes."""
    conn = multiprocessing.connection.Connection(fd)
    group, scratch, fork = conn.recv()
    booter_main(conn, group, scratch, fork)


# -- the pool, in the campaign process ---------------------------------------------------------


class _Subprocess:
    """A booter started with ``subprocess`` (a fresh interpreter), with the parts of
    ``multiprocessing.Process`` the pool uses; its sentinel is a pidfd (Linux)."""

    def __init__(self, group: Group, scratch: str, fork: bool, conn: multiprocessing.connection.Connection) -> None:
        self.conn = conn
        self.args = (group, scratch, fork)
        self.popen: subprocess.Popen[bytes] | None = None
        self.sentinel = -1

    def start(self, child: multiprocessing.connection.Connection) -> None:
        fd = child.fileno()
        code = f"from chaoskube.experiments.forking import booter_from_fd; booter_from_fd({fd})"
        self.popen = subprocess.Popen([sys.executable, "-c", code], pass_fds=(fd,), stdin=subprocess.DEVNULL)
        self.sentinel = os.pidfd_open(self.popen.pid)
        self.conn.send(self.args)

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None

    def join(self, timeout: float | None = None) -> None:
        if self.popen is None:
            return
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1


def start_context() -> multiprocessing.context.BaseContext:
    """``forkserver`` (booters must not be forked from a process that may hold threads);
    it imports the runner once and forks each booter from that."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["chaoskube.experiments.forking", "chaoskube.experiments.campaign", "chaoskube.experiments.runner"])
    return context


@dataclass
class _Booter:
    group: Group
    queue: list[Any]  # jobs not yet handed to the booter, in order
    state: str = "new"  # new -> booting -> ready -> stopped; or failed
    process: Any = None
    conn: multiprocessing.connection.Connection | None = None
    running: dict[str, Any] = field(default_factory=dict)  # out_dir -> job
    boot_seconds: tuple[float, float] | None = None  # (wall, CPU) of the boot
    cpu_seconds: float = 0.0  # the booter's and its children's CPU, reported as it exits


class ForkPool:
    """Runs groups of jobs in booters and their forked children (module doc)."""

    def __init__(self, groups: Sequence[tuple[Group, Sequence[Any]]], width: int, scratch: Path, *, fork: bool = True, launcher: str = "forkserver") -> None:
        assert width >= 1, width
        assert launcher in ("forkserver", "subprocess"), launcher
        self.width = width
        self.scratch = scratch
        self.fork = fork
        self.launcher = launcher
        self.context = start_context() if launcher == "forkserver" else multiprocessing.get_context()
        self.booters = [_Booter(group, list(jobs)) for group, jobs in groups if jobs]
        self.not_started = 0

    # -- state -----------------------------------------------------------------------------
    @property
    def busy(self) -> int:
        return sum(len(b.running) + (b.state == "booting") for b in self.booters)

    @property
    def finished(self) -> bool:
        return all(not b.queue and not b.running and b.state != "booting" for b in self.booters)

    def running_jobs(self) -> list[Any]:
        return [job for booter in self.booters for job in booter.running.values()]

    def boot_seconds(self) -> list[tuple[float, float]]:
        return [booter.boot_seconds for booter in self.booters if booter.boot_seconds is not None]

    def cpu_seconds(self) -> float:
        """CPU seconds used by the booters that have exited and by their children (the
        campaign's own ``RUSAGE_CHILDREN`` misses them: booters are the forkserver's)."""
        return sum(booter.cpu_seconds for booter in self.booters)

    # -- driving ---------------------------------------------------------------------------
    def _start(self, index: int, booter: _Booter) -> None:
        parent, child = multiprocessing.Pipe()
        scratch = self.scratch / f"boot-{index}"
        try:
            if self.launcher == "subprocess":
                process: Any = _Subprocess(booter.group, str(scratch), self.fork, parent)
                process.start(child)
            else:
                process = self.context.Process(target=booter_main, args=(child, booter.group, str(scratch), self.fork), name=f"chaoskube-booter-{index}", daemon=False)
                process.start()
        finally:
            child.close()
        booter.process = process
        booter.conn = parent
        booter.state = "booting"

    def _dispatch(self, records: list[tuple[Any, dict[str, Any]]]) -> None:
        free = self.width - self.busy
        for index, booter in enumerate(self.booters):
            if booter.state == "failed":
                continue
            if booter.state == "new" and booter.queue and free > 0:
                self._start(index, booter)
                free -= 1
            while booter.state == "ready" and booter.queue and free > 0:
                job = booter.queue.pop(0)
                assert booter.conn is not None
                booter.conn.send(("run", job))
                booter.running[job.out_dir] = job
                free -= 1
            if booter.state == "ready" and not booter.queue and not booter.running:
                self._stop(booter)

    def _stop(self, booter: _Booter) -> None:
        assert booter.conn is not None
        try:
            booter.conn.send(("stop",))
            if booter.conn.poll(30):
                message = booter.conn.recv()
                if message[0] == "cpu":
                    booter.cpu_seconds = message[1]
        except (OSError, EOFError):
            pass
        booter.state = "stopped"
        booter.process.join(timeout=30)

    def _fail_group(self, booter: _Booter, message: str, records: list[tuple[Any, dict[str, Any]]]) -> None:
        for job in [*booter.running.values(), *booter.queue]:
            records.append((job, booter.group.error(job, message)))
        booter.running.clear()
        booter.queue.clear()
        booter.state = "failed"
        if booter.process is not None:
            booter.process.join(timeout=30)

    def wait(self) -> list[tuple[Any, dict[str, Any]]]:
        """Start what the slots allow, then block until at least one job is finished (or
        a boot is); returns the finished jobs with their records."""
        records: list[tuple[Any, dict[str, Any]]] = []
        while not records and not self.finished:
            self._dispatch(records)
            live = {booter.conn: booter for booter in self.booters if booter.conn is not None and booter.state in ("booting", "ready")}
            sentinels = {booter.process.sentinel: booter for booter in self.booters if booter.state in ("booting", "ready")}
            if not live:
                continue
            ready = multiprocessing.connection.wait([*live, *sentinels])
            for item in sorted(ready, key=lambda item: item not in live):  # messages before deaths
                if item in live:
                    booter = live[item]
                    while booter.conn is not None and booter.state in ("booting", "ready") and booter.conn.poll():
                        try:
                            message = booter.conn.recv()
                        except (EOFError, OSError):
                            break  # its sentinel says what happened
                        self._handle(booter, message, records)
                elif sentinels[item].state in ("booting", "ready"):  # died without a word
                    booter = sentinels[item]
                    booter.process.join(timeout=5)
                    self._fail_group(booter, f"the booter process died (exit code {booter.process.exitcode})", records)
        # No hand-out here: the caller sees these records first (``--fail-fast`` may stop
        # the campaign); the next call hands out what the slots allow.
        return records

    def _handle(self, booter: _Booter, message: tuple[Any, ...], records: list[tuple[Any, dict[str, Any]]]) -> None:
        if message[0] == "booted":
            booter.state, booter.boot_seconds = "ready", (message[1], message[2])
        elif message[0] == "boot-failed":
            self._fail_group(booter, f"the boot failed: {message[1]}", records)
        elif message[0] == "cpu":
            booter.cpu_seconds = message[1]
        else:
            assert message[0] == "record", message[0]
            records.append((booter.running.pop(message[1]), message[2]))

    def stop_starting(self) -> None:
        """Hand out no more jobs (``--fail-fast``); running ones finish."""
        for booter in self.booters:
            self.not_started += len(booter.queue)
            booter.queue.clear()

    def abort(self) -> list[Any]:
        """Kill every booter with its children now; returns the jobs that were running."""
        running = self.running_jobs()
        for booter in self.booters:
            self.not_started += len(booter.queue)
            booter.queue.clear()
            if booter.process is not None and booter.process.pid is not None and booter.state in ("booting", "ready", "stopped"):
                try:
                    os.killpg(booter.process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            booter.running.clear()
            booter.state = "failed"
        self.close()
        return running

    def close(self) -> None:
        for booter in self.booters:
            if booter.state == "ready":
                self._stop(booter)
            if booter.process is not None:
                booter.process.join(timeout=30)
            if booter.conn is not None:
                booter.conn.close()
                booter.conn = None
        shutil.rmtree(self.scratch, ignore_errors=True)

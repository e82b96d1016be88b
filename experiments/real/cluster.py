"""A real etcd cluster on loopback, and real faults on it (SIGKILL, SIGSTOP, Toxiproxy toxics).

``RealEtcdCluster`` starts ``members`` processes of the ``etcd`` binary (Debian's 3.4.23)
on 127.0.0.1, each with its own client port, peer port and data directory under a
working directory, with ``--pre-vote`` and configurable heartbeat / election timers.
Every peer link passes through a Toxiproxy-compatible server (ours,
``chaoskube.faults.toxiproxy``): one proxy listens in front of each member's peer port, and that
proxy's address is what the member advertises (``--initial-advertise-peer-urls``,
``--initial-cluster``), while the member listens on its real peer port. Peers dial each
other in both directions, so cutting A from B takes a ``chaoskube_block_from`` toxic on
B's proxy listing A's id (A's dials) AND one on A's proxy listing B's id (B's dials):
partitions here are always symmetric (shared/FACTS.md, "Real etcd").

Faults are planned as data with ``chaoskube.faults.kinds.plan`` (same targets, same grudges as the
simulation) and applied and healed by the thin code below (:func:`apply`, :func:`heal`,
idempotent). Supported kinds: ``kill`` (SIGKILL; heal restarts from the data directory
once the member's ports are free), ``pause`` (SIGSTOP / SIGCONT), ``isolate``, ``split``,
``bridge`` (the plan's grudge, made symmetric, as per-proxy ``chaoskube_block_from``
toxics), ``link-delay`` (a ``latency`` toxic on both streams of each target's proxy) and
``link-loss`` (a ``timeout`` toxic on both streams with ``toxicity`` = loss: that
fraction of the peer connections through the target's proxy black-holes, live ones
included; TCP has no packet loss to imitate).

Non-guarantees: ``link-delay`` and ``link-loss`` on one member act on the connections the
*other* members dial to it (its proxy); the raft streams the target itself dials to the
others pass their proxies untouched, so roughly one direction of stream traffic is
affected. On ``role:etcd`` every proxy is affected and the approximation disappears.

Process hygiene: every member is a child of this process (``subprocess.Popen`` with
``PR_SET_PDEATHSIG`` = SIGKILL, so even a SIGKILLed runner takes its members along), is
SIGKILLed and reaped by :meth:`RealEtcdCluster.aclose`, which callers run in a
``finally`` under a shielded cancel scope (Ctrl-C included).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from chaoskube.experiments.signals import die_with_parent
from chaoskube.faults.kinds import Plan

__all__ = [
    "REAL_KINDS",
    "RealEtcdCluster",
    "RealEtcdError",
    "RealFault",
    "apply",
    "find_etcd_binary",
    "free_ports",
    "heal",
    "port_in_use",
    "symmetric_blocks",
]

# Fault kinds this module can apply to real processes.
REAL_KINDS = frozenset({"kill", "pause", "isolate", "split", "bridge", "link-delay", "link-loss"})
PARTITION_TOXIC = "chaoskube-partition"
PORT_FREE_WAIT_S = 15.0  # bound on waiting for a killed member's ports (FACTS: > 2 s seen)
START_WAIT_S = 20.0  # bound on waiting for a new cluster to list its members


class RealEtcdError(RuntimeError):
    """The real cluster could not be started, driven or stopped."""


def find_etcd_binary() -> str | None:
    """``$CHAOSKUBE_ETCD`` if set, else ``etcd`` on PATH (Debian puts it in /usr/bin)."""
    explicit = os.environ.get("CHAOSKUBE_ETCD")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("etcd")


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago (bound together to
    port 0, then released). Another process may take one in between; callers fail loudly
    if so (etcd exits with "address already in use")."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_in_use(port: int) -> bool:
    """True if something listens on 127.0.0.1:port. Binds with SO_REUSEADDR, as Go's
    listeners do, so TIME_WAIT leftovers do not count as in use."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            return True
        raise
    finally:
        sock.close()
    return False


def symmetric_blocks(grudge: dict[str, set[str] | frozenset[str]], members: list[str]) -> dict[str, list[str]]:
    """Per member: the members whose dials its proxy must refuse. A cut of ``src -> dst``
    also cuts ``dst -> src``, because raft messages ride connections dialed from either
    end (pure)."""
    blocks: dict[str, set[str]] = {member: set() for member in members}
    for dst, sources in grudge.items():
        for src in sources:
            if dst in blocks and src in blocks and src != dst:
                blocks[dst].add(src)
                blocks[src].add(dst)
    return {member: sorted(sources) for member, sources in sorted(blocks.items())}




@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    proxy_port: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    id_hex: str | None = None
    paused: bool = False
    incarnation: int = 0
    pids: list[int] = field(default_factory=list)  # every pid ever started, for the tests

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class RealEtcdCluster:
    """``members`` real etcd processes behind per-member peer proxies.

    Order of use: ``await start()``; faults through :func:`apply` / :func:`heal`;
    ``await aclose()`` in a ``finally`` (shielded). ``record`` receives journal events
    (``process`` starts, kills, pauses, toxics).
    """

    def __init__(
        self,
        workdir: str | Path,
        toxiproxy_url: str,
        *,
        members: int = 3,
        heartbeat_ms: int = 100,
        election_ms: int = 1000,
        pre_vote: bool = True,
        binary: str | None = None,
        token: str = "chaoskube",
        record: Callable[..., None] | None = None,
    ) -> None:
        assert members >= 1
        found = binary or find_etcd_binary()
        if found is None:
            raise RealEtcdError("no etcd binary: install it (apt-get install etcd-server) or set CHAOSKUBE_ETCD")
        self.binary = found
        self.workdir = Path(workdir)
        self.toxiproxy_url = toxiproxy_url.rstrip("/")
        self.heartbeat_ms = heartbeat_ms
        self.election_ms = election_ms
        self.pre_vote = pre_vote
        self.token = token
        self.record = record or (lambda type, **fields: None)
        ports = free_ports(3 * members)
        self.members: dict[str, Member] = {}
        for index in range(members):
            name = f"etcd-{index + 1}"
            self.members[name] = Member(
                name,
                client_port=ports[3 * index],
                peer_port=ports[3 * index + 1],
                proxy_port=ports[3 * index + 2],
                data_dir=self.workdir / name,
                log_path=self.workdir / f"{name}.log",
            )
        self.grudge: dict[str, set[str]] = {}  # union of the active partitions
        self._toxics: dict[str, list[str]] = {}  # member -> dialers its proxy refuses now
        self._http: Any = None
        self.closed = False

    # -- names -------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return sorted(self.members)

    @property
    def client_urls(self) -> dict[str, str]:
        return {name: member.client_url for name, member in sorted(self.members.items())}

    def ports(self) -> list[int]:
        return sorted(port for member in self.members.values() for port in (member.client_port, member.peer_port, member.proxy_port))

    def pids(self) -> list[int]:
        return sorted(pid for member in self.members.values() for pid in member.pids)

    def name_of_id(self, member_id: str | int) -> str | None:
        """A member's name from its id (decimal as the JSON gateway writes it, or hex)."""
        try:
            value = int(member_id) if isinstance(member_id, int) or str(member_id).isdigit() else int(str(member_id), 16)
        except ValueError:
            return None
        for member in self.members.values():
            if member.id_hex is not None and int(member.id_hex, 16) == value:
                return member.name
        return None

    def _initial_cluster(self) -> str:
        return ",".join(f"{m.name}=http://127.0.0.1:{m.proxy_port}" for m in sorted(self.members.values(), key=lambda m: m.name))

    def _args(self, member: Member) -> list[str]:
        args = [
            self.binary,
            "--name", member.name,
            "--data-dir", str(member.data_dir),
            "--listen-client-urls", member.client_url,
            "--advertise-client-urls", member.client_url,
            "--listen-peer-urls", f"http://127.0.0.1:{member.peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{member.proxy_port}",
            "--initial-cluster", self._initial_cluster(),
            "--initial-cluster-token", self.token,
            "--initial-cluster-state", "new",
            "--heartbeat-interval", str(self.heartbeat_ms),
            "--election-timeout", str(self.election_ms),
            "--logger", "zap",
            "--log-outputs", "stderr",
        ]
        if self.pre_vote:
            args.append("--pre-vote")
        return args

    # -- life cycle --------------------------------------------------------------------------
    async def start(self) -> None:
        """Create the proxies, start every member, learn the member ids."""
        import httpx

        self.workdir.mkdir(parents=True, exist_ok=True)
        self._http = httpx.AsyncClient(base_url=self.toxiproxy_url, timeout=5.0)
        for member in self.members.values():
            await self._api("POST", "/proxies", {"name": f"peer-{member.name}", "listen": f"127.0.0.1:{member.proxy_port}", "upstream": f"127.0.0.1:{member.peer_port}", "enabled": True}, ok=(201,))
        for member in self.members.values():
            self._spawn(member)
        await self._learn_ids()

    def _spawn(self, member: Member) -> None:
        assert not member.running, f"{member.name} is already running"
        member.incarnation += 1
        with open(member.log_path, "ab") as log:
            member.process = subprocess.Popen(  # noqa: S603 - our own argument list
                self._args(member),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches the runner only; it stops the members
                preexec_fn=die_with_parent,  # noqa: PLW1509 - no threads fork here
            )
        member.paused = False
        member.pids.append(member.process.pid)
        self.record("process", event="start", process=member.name, pid=member.process.pid, incarnation=member.incarnation)

    async def _learn_ids(self) -> None:
        import httpx

        async with httpx.AsyncClient(timeout=1.0) as client:
            with trio.move_on_after(START_WAIT_S):
                while True:
                    for member in self.members.values():
                        if not member.running:
                            raise RealEtcdError(f"{member.name} exited with {member.process.returncode if member.process else None} at start; see {member.log_path}")
                    try:
                        reply = await client.post(f"{next(iter(self.members.values())).client_url}/v3/cluster/member/list", json={})
                        listed = reply.json().get("members", []) if reply.status_code == 200 else []
                    except (httpx.HTTPError, ValueError):
                        listed = []
                    for entry in listed:
                        if entry.get("name") in self.members:
                            self.members[entry["name"]].id_hex = format(int(entry["ID"]), "x")
                    if all(member.id_hex for member in self.members.values()):
                        self.record("cluster", event="members", ids={name: member.id_hex for name, member in sorted(self.members.items())})
                        return
                    await trio.sleep(0.1)
        raise RealEtcdError(f"the cluster did not list its {len(self.members)} members within {START_WAIT_S:g} s; logs in {self.workdir}")

    async def kill(self, name: str) -> None:
        """SIGKILL ``name`` and reap it. A no-op if it is not running."""
        member = self.members[name]
        if member.process is None:
            return
        if member.process.poll() is None:
            member.process.send_signal(signal.SIGKILL)
            self.record("process", event="kill", process=name, pid=member.process.pid)
        await _reap(member.process)
        member.paused = False

    async def restart(self, name: str) -> None:
        """Start ``name`` again from its data directory, once its ports are free."""
        member = self.members[name]
        if member.running:
            return
        with trio.move_on_after(PORT_FREE_WAIT_S):
            while port_in_use(member.client_port) or port_in_use(member.peer_port):
                await trio.sleep(0.05)
        if port_in_use(member.client_port) or port_in_use(member.peer_port):
            raise RealEtcdError(f"{name}'s ports {member.client_port}/{member.peer_port} still in use {PORT_FREE_WAIT_S:g} s after it was killed")
        self._spawn(member)

    def pause(self, name: str) -> None:
        member = self.members[name]
        if member.running and not member.paused:
            member.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
            member.paused = True
            self.record("process", event="pause", process=name)

    def resume(self, name: str) -> None:
        member = self.members[name]
        if member.running and member.paused:
            member.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
            self.record("process", event="resume", process=name)
        member.paused = False

    async def aclose(self) -> None:
        """SIGKILL and reap every member, delete the proxies (best effort). Idempotent;
        call it shielded from cancellation."""
        for member in self.members.values():
            if member.process is not None and member.process.poll() is None:
                member.process.send_signal(signal.SIGKILL)
        for member in self.members.values():
            if member.process is not None:
                await _reap(member.process)
        if self._http is not None and not self.closed:
            with trio.move_on_after(2.0):
                for member in self.members.values():
                    with contextlib.suppress(Exception):
                        await self._http.delete(f"/proxies/peer-{member.name}")
            with contextlib.suppress(Exception):
                await self._http.aclose()
        self.closed = True

    # -- toxics ------------------------------------------------------------------------------
    async def _api(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201, 204)) -> Any:
        reply = await self._http.request(method, path, json=body)
        if reply.status_code not in ok:
            raise RealEtcdError(f"toxiproxy {method} {path}: {reply.status_code} {reply.text.strip()}")
        return reply.json() if reply.content else None

    async def set_grudge(self, grudge: dict[str, set[str]]) -> None:
        """Make the proxies refuse exactly the dials ``grudge`` (made symmetric) implies:
        one ``chaoskube_block_from`` toxic per member, created, updated or removed."""
        self.grudge = {dst: set(sources) for dst, sources in grudge.items() if sources}
        wanted = symmetric_blocks(self.grudge, self.names)
        for name, sources in wanted.items():
            if self._toxics.get(name, []) == sources:
                continue
            proxy = f"/proxies/peer-{name}/toxics"
            values = [self.members[source].id_hex for source in sources]
            if not sources:
                await self._api("DELETE", f"{proxy}/{PARTITION_TOXIC}", ok=(204, 404))
            elif self._toxics.get(name):
                await self._api("POST", f"{proxy}/{PARTITION_TOXIC}", {"attributes": {"header": "X-Server-From", "values": values}})
            else:
                await self._api("POST", proxy, {"name": PARTITION_TOXIC, "type": "chaoskube_block_from", "stream": "upstream", "attributes": {"header": "X-Server-From", "values": values}})
            newly_refused = sorted(set(sources) - set(self._toxics.get(name, [])))
            if newly_refused:
                # Drop every live connection through this proxy (disable, enable): a toxic
                # added to a live connection judges it by its first request only, and
                # etcd's kept-alive pipeline connections can begin with a request that
                # carries no X-Server-From (seen: a cut leader kept committing through
                # them). Connections made while the toxic exists are judged per request.
                await self._api("POST", f"/proxies/peer-{name}", {"enabled": False})
                await self._api("POST", f"/proxies/peer-{name}", {"enabled": True})
            self._toxics[name] = sources
            self.record("toxic", proxy=f"peer-{name}", toxic=PARTITION_TOXIC, refuses=sources, reconnected=bool(newly_refused))

    async def add_toxic(self, member: str, toxic: dict[str, Any]) -> None:
        await self._api("POST", f"/proxies/peer-{member}/toxics", toxic)
        self.record("toxic", proxy=f"peer-{member}", toxic=toxic["name"], event="add", spec=toxic)

    async def remove_toxic(self, member: str, name: str) -> None:
        await self._api("DELETE", f"/proxies/peer-{member}/toxics/{name}", ok=(204, 404))
        self.record("toxic", proxy=f"peer-{member}", toxic=name, event="remove")


async def _reap(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    """Wait for ``process`` to exit and reap it (a zombie still answers ``kill -0``)."""
    with trio.move_on_after(timeout_s):
        while process.poll() is None:
            await trio.sleep(0.01)
    if process.poll() is None:  # it ignored SIGKILL for 10 s: a stuck kernel; block on it
        process.wait()


# -- faults on the real cluster ---------------------------------------------------------------


@dataclass
class RealFault:
    """One applied fault, shaped like ``chaoskube.faults.schedule.ActiveFault``."""

    id: int
    plan: Plan
    saved: dict[str, Any]
    applied_at: float
    healed_at: float | None = None


async def apply(cluster: RealEtcdCluster, plan: Plan, fault_id: int) -> dict[str, Any]:
    """Do what ``plan`` says on the real cluster. Returns what :func:`heal` needs."""
    if plan.kind not in REAL_KINDS:
        raise RealEtcdError(f"fault kind {plan.kind!r} is not supported on a real cluster (supported: {', '.join(sorted(REAL_KINDS))})")
    saved: dict[str, Any] = {}
    if plan.grudge is not None:
        merged = {dst: set(sources) for dst, sources in cluster.grudge.items()}
        for dst, sources in plan.grudge.items():
            merged.setdefault(dst, set()).update(sources)
        await cluster.set_grudge(merged)
    elif plan.kind == "kill":
        for name in plan.targets:
            await cluster.kill(name)
    elif plan.kind == "pause":
        for name in plan.targets:
            cluster.pause(name)
    elif plan.kind == "link-delay":
        toxics = []
        for name in plan.targets:
            for stream in ("upstream", "downstream"):
                toxic = {"name": f"fault-{fault_id}-latency-{stream}", "type": "latency", "stream": stream, "attributes": {"latency": int(plan.params["delay_ms"]), "jitter": int(plan.params["jitter_ms"])}}
                await cluster.add_toxic(name, toxic)
                toxics.append((name, toxic["name"]))
        saved["toxics"] = toxics
    elif plan.kind == "link-loss":
        toxics = []
        for name in plan.targets:
            for stream in ("upstream", "downstream"):
                toxic = {"name": f"fault-{fault_id}-loss-{stream}", "type": "timeout", "stream": stream, "toxicity": float(plan.params["loss"]), "attributes": {"timeout": 0}}
                await cluster.add_toxic(name, toxic)
                toxics.append((name, toxic["name"]))
        saved["toxics"] = toxics
    return saved


async def heal(cluster: RealEtcdCluster, plan: Plan, saved: dict[str, Any]) -> None:
    """Undo ``plan``. Idempotent: healing twice, or a target that recovered, is fine."""
    if plan.grudge is not None:
        remaining = {dst: set(sources) - set(plan.grudge.get(dst, ())) for dst, sources in cluster.grudge.items()}
        await cluster.set_grudge(remaining)
    elif plan.kind == "kill":
        for name in plan.targets:
            await cluster.restart(name)
    elif plan.kind == "pause":
        for name in plan.targets:
            cluster.resume(name)
    elif plan.kind in ("link-delay", "link-loss"):
        for name, toxic in saved.get("toxics", []):
            await cluster.remove_toxic(name, toxic)

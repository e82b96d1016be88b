"""TCP proxies and their toxic pipelines, on Trio.

Shapes follow Toxiproxy 2.x (``proxy.go``, ``link.go``, ``toxic_collection.go``):

* a ``Proxy`` listens on ``listen`` and, for each client, dials ``upstream``;
* each connection has two links, upstream (client→server) and downstream
  (server→client); a link is reader → stage → … → stage → writer, one stage per toxic
  of that direction, in the order the toxics were added;
* a ``ToxicCollection`` holds the proxy's toxics and every live link, so adding,
  updating or removing a toxic changes live connections too.

Contract of a link, the same as Toxiproxy's:

1. Bytes leave in the order they were read; a toxic that is removed hands the data it
   holds to the next stage at once (a latency toxic's delayed chunks are not delayed
   further), except ``timeout``, whose removal closes the link (its Cleanup).
2. When a link's stream ends (the source reached end of file, or a toxic closed it),
   the writer closes the destination socket — fully, as Go's ``Close`` does — so the
   other link sees its source closed, drains what it already holds through its own
   toxics (latency, slow_close still apply) and closes the other socket.
3. ``reset_peer`` and ``chaoskube_block_from`` reset both sockets at once (SO_LINGER 0,
   so the peers see RST). Toxiproxy sets the linger only on connections opened while a
   reset_peer toxic exists; we do it whenever the toxic fires.
4. Disabling or deleting a proxy closes its listener and every socket of its
   connections before the API call returns.

Not guaranteed: byte-exact timing (Trio wakes tasks in the order it likes, so two
stages that become ready together may move in either order); toxicity draws are
reproducible from the seed only as far as connections arrive in the same order.
"""

from __future__ import annotations

import logging
import random
import socket
import struct
from collections import deque
from typing import Any

import trio

from chaoskube.faults.toxiproxy.toxics import (
    BUFFER_CHUNKS,
    CLOSES_ON_REMOVE,
    DIRECTIONS,
    DOWNSTREAM,
    END,
    PIPES,
    UPSTREAM,
    Chunk,
    FirstRequestRecorder,
    ToxicSpec,
    draw_applies,
    pipe_noop,
)

LOGGER = logging.getLogger(__name__)

READ_SIZE_BYTES = 16 * 1024
UPSTREAM_DIAL_TIMEOUT_S = 10.0
LISTEN_BACKLOG = 128


# ----------------------------------------------------------------- addresses (pure)


class AddressError(ValueError):
    """A listen or upstream address that is not host:port."""


def parse_address(address: str, *, default_host: str | None = None) -> tuple[str, int]:
    """Split ``host:port`` (``[v6]:port`` too). An empty host becomes ``default_host``
    when one is given; otherwise it is an error. Ports must be 0..65535."""
    if not isinstance(address, str):
        raise AddressError(f"address {address!r} is not a string")
    if address.startswith("["):
        close = address.find("]")
        if close < 0 or not address[close + 1 :].startswith(":"):
            raise AddressError(f"address {address}: missing port")
        host, port_text = address[1:close], address[close + 2 :]
    else:
        host, sep, port_text = address.rpartition(":")
        if not sep:
            raise AddressError(f"address {address}: missing port in address")
        if ":" in host:
            raise AddressError(f"address {address}: too many colons in address")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise AddressError(f"address {address}: invalid port")
    if not host:
        if default_host is None:
            raise AddressError(f"address {address}: missing host")
        host = default_host
    return host, int(port_text)


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def bind_listener(host: str, port: int) -> trio.SocketListener:
    """A listening socket on exactly one address (trio.open_tcp_listeners may open
    several, with different ports, for a name like ``localhost``)."""
    infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    if not infos:
        raise OSError(f"listen tcp {format_address(host, port)}: no address")
    family, kind, proto, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # Go does too
        await sock.bind(sockaddr)
        sock.listen(LISTEN_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(sock)


def listener_address(listener: trio.SocketListener) -> tuple[str, int]:
    host, port = listener.socket.getsockname()[:2]
    return host, port


def close_stream_now(stream: trio.SocketStream, *, reset: bool) -> None:
    """Close a socket synchronously; ``reset`` sends RST instead of FIN.

    Tasks blocked on the socket wake with ClosedResourceError. Idempotent.
    """
    sock = stream.socket
    if sock.fileno() == -1:
        return
    if reset:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    sock.close()


# ------------------------------------------------------------------------- links


class _Buffer:
    """A stage's input queue, bounded in chunks. A *sink* discards what it gets:
    the input of a stage or writer that has finished, so nobody waits on it forever."""

    __slots__ = ("items", "capacity", "sink")

    def __init__(self, capacity: int) -> None:
        assert capacity >= 1
        self.items: deque[Any] = deque()
        self.capacity = capacity
        self.sink = False

    def has_space(self) -> bool:
        return self.sink or len(self.items) < self.capacity

    def push(self, item: Any) -> None:
        if not self.sink:
            self.items.append(item)

    def make_sink(self) -> None:
        self.sink = True
        self.items.clear()


class _Stage:
    """One toxic on one link: runs the toxic's pipe (or a noop when toxicity said no)
    and restarts it when the toxic is updated. See toxics.py for the interface."""

    def __init__(self, link: _Link, spec: ToxicSpec, rng: random.Random) -> None:
        self.link = link
        self.spec = spec
        self.rng = rng
        self.applies = draw_applies(spec.toxicity, rng)
        self.input = _Buffer(BUFFER_CHUNKS.get(spec.type, 1))
        self.state: dict[str, Any] = {}
        # A stage added after bytes were read sees the stream from some later offset.
        self.joined_mid_stream = link.bytes_read > 0
        self.first_request = link.first_request
        self.finished = False  # the stream has ended at this stage
        self.removing = False
        self.close_on_remove = False
        self.task_done = False
        self._scope: trio.CancelScope | None = None

    # -- lifecycle, called by the collection (synchronous)

    def restart(self, spec: ToxicSpec) -> None:
        self.spec = spec
        self.applies = draw_applies(spec.toxicity, self.rng)
        if self._scope is not None:
            self._scope.cancel()

    def remove(self, *, close: bool) -> None:
        self.removing = True
        self.close_on_remove = close
        if self.task_done:
            self._detach()
        elif self._scope is not None:
            self._scope.cancel()

    async def run(self) -> None:
        try:
            while not self.finished and not self.removing:
                with trio.CancelScope() as scope:
                    self._scope = scope
                    pipe = PIPES[self.spec.type] if self.applies else pipe_noop
                    await pipe(self)
                    self.finished = True
                self._scope = None
            if self.removing:
                if self.close_on_remove and not self.finished:
                    self.close_stream()
                self._detach()
        finally:
            self.task_done = True
            if self.finished:
                self.input.make_sink()
                self.link.changed()

    def _detach(self) -> None:
        """Take this stage out of its link; what it still holds goes on, in order."""
        link = self.link
        if self not in link.stages:
            return
        index = link.stages.index(self)
        successor = link.input_of(index + 1)
        for item in self.input.items:
            successor.push(item)
        self.input.items.clear()
        del link.stages[index]
        link.changed()

    # -- the interface pipes use

    async def peek(self) -> Any:
        while not self.input.items:
            await self.link.wait_changed()
        await trio.lowlevel.checkpoint_if_cancelled()
        return self.input.items[0]

    async def wait_for_space(self) -> None:
        while not self.link.output_of(self).has_space():
            await self.link.wait_changed()
        await trio.lowlevel.checkpoint_if_cancelled()

    async def wait_for_second(self) -> bool:
        while len(self.input.items) < 2:
            await self.link.wait_changed()
        return self.input.items[1] is not END

    def forward(self, nbytes: int | None = None) -> None:
        head = self.input.items[0]
        output = self.link.output_of(self)
        if nbytes is None or head is END or nbytes >= len(head.data):
            self.input.items.popleft()
            output.push(head)
        else:
            assert nbytes > 0
            output.push(Chunk(head.data[:nbytes], head.timestamp))
            self.input.items[0] = Chunk(head.data[nbytes:], head.timestamp)
        self.link.changed()

    def drop(self) -> None:
        self.input.items.popleft()
        self.link.changed()

    def merge_head(self) -> None:
        first = self.input.items.popleft()
        second = self.input.items[0]
        assert first is not END and second is not END
        self.input.items[0] = Chunk(first.data + second.data, first.timestamp)
        self.link.changed()

    def close_stream(self) -> None:
        self.link.output_of(self).push(END)
        self.finished = True
        self.input.make_sink()
        self.link.changed()

    def abort_connection(self) -> None:
        self.close_stream()
        self.link.connection.abort(reset=True)


class _Link:
    """One direction of one connection: reader → stages → writer."""

    def __init__(self, connection: _Connection, direction: str, source: trio.SocketStream, dest: trio.SocketStream) -> None:
        self.connection = connection
        self.direction = direction
        self.source = source
        self.dest = dest
        self.stages: list[_Stage] = []
        self.writer_input = _Buffer(1)
        self.bytes_read = 0
        self.first_request = FirstRequestRecorder() if direction == UPSTREAM else None
        self._lot = trio.lowlevel.ParkingLot()

    def changed(self) -> None:
        self._lot.unpark_all()

    async def wait_changed(self) -> None:
        await self._lot.park()

    def input_of(self, index: int) -> _Buffer:
        return self.stages[index].input if index < len(self.stages) else self.writer_input

    def output_of(self, stage: _Stage) -> _Buffer:
        return self.input_of(self.stages.index(stage) + 1)

    def add_stage(self, spec: ToxicSpec) -> None:
        if self.connection.finished:
            return
        stage = _Stage(self, spec, self.connection.rng)
        self.stages.append(stage)
        self.connection.spawn(stage.run)
        self.changed()

    def stage_for(self, spec: ToxicSpec) -> _Stage | None:
        for stage in self.stages:
            if stage.spec.name == spec.name and not stage.removing:
                return stage
        return None

    async def read(self) -> None:
        try:
            while True:
                try:
                    data = await self.source.receive_some(READ_SIZE_BYTES)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if not data:
                    return
                self.bytes_read += len(data)
                if self.first_request is not None:
                    self.first_request.feed(data)  # before any stage can see the bytes
                chunk = Chunk(data, trio.current_time())
                while not self.input_of(0).has_space():
                    await self.wait_changed()
                self.input_of(0).push(chunk)
                self.changed()
        finally:
            self.input_of(0).push(END)  # one item past the bound, once
            self.changed()

    async def write(self) -> None:
        buffer = self.writer_input
        try:
            while True:
                while not buffer.items:
                    await self.wait_changed()
                item = buffer.items.popleft()
                self.changed()
                if item is END:
                    return
                try:
                    await self.dest.send_all(item.data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
        finally:
            buffer.make_sink()
            self.changed()
            close_stream_now(self.dest, reset=False)


class _Connection:
    def __init__(self, proxy: Proxy, client: trio.SocketStream, upstream: trio.SocketStream, rng: random.Random) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.rng = rng
        self.nursery: trio.Nursery | None = None  # set by run()
        self.finished = False  # every task has ended; the nursery takes no more
        self._tasks = 0
        self.links = {
            UPSTREAM: _Link(self, UPSTREAM, client, upstream),
            DOWNSTREAM: _Link(self, DOWNSTREAM, upstream, client),
        }

    def abort(self, *, reset: bool) -> None:
        close_stream_now(self.client, reset=reset)
        close_stream_now(self.upstream, reset=reset)
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    def spawn(self, function: Any) -> None:
        assert self.nursery is not None and not self.finished
        self._tasks += 1
        self.nursery.start_soon(self._counted, function)

    async def _counted(self, function: Any) -> None:
        try:
            await function()
        finally:
            self._tasks -= 1
            if self._tasks == 0:
                # The last task: leave the collection before the nursery closes, so a
                # toxic added from now on does not try to start a stage here.
                self._leave()

    def _leave(self) -> None:
        self.finished = True
        for link in self.links.values():
            self.proxy.toxics.links.discard(link)

    async def run(self) -> None:
        collection = self.proxy.toxics
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                # From here to the end of registration there is no checkpoint, so no
                # toxic can be added or removed between the snapshot and the link.
                for direction, link in self.links.items():
                    for spec in collection.chain[direction]:
                        link.add_stage(spec)
                    collection.links.add(link)
                    self.spawn(link.read)
                    self.spawn(link.write)
        finally:
            self._leave()
            self.abort(reset=False)


# ------------------------------------------------------------------- collections


class ToxicCollection:
    """The toxics of one proxy, per direction in insertion order, and its live links."""

    def __init__(self) -> None:
        self.chain: dict[str, list[ToxicSpec]] = {direction: [] for direction in DIRECTIONS}
        self.links: set[_Link] = set()

    def find(self, name: str) -> ToxicSpec | None:
        for direction in DIRECTIONS:
            for spec in self.chain[direction]:
                if spec.name == name:
                    return spec
        return None

    def to_json(self) -> list[dict[str, Any]]:
        return [spec.to_json() for direction in DIRECTIONS for spec in self.chain[direction]]

    def add(self, spec: ToxicSpec) -> None:
        assert self.find(spec.name) is None, spec.name
        self.chain[spec.direction].append(spec)
        for link in list(self.links):
            if link.direction == spec.direction:
                link.add_stage(spec)

    def replace(self, old: ToxicSpec, new: ToxicSpec) -> None:
        """Update a toxic in place (same name, type, direction, position)."""
        chain = self.chain[old.direction]
        chain[chain.index(old)] = new
        for link in list(self.links):
            if link.direction == old.direction:
                stage = link.stage_for(old)
                if stage is not None:
                    stage.restart(new)

    def remove(self, spec: ToxicSpec) -> None:
        self.chain[spec.direction].remove(spec)
        for link in list(self.links):
            if link.direction == spec.direction:
                stage = link.stage_for(spec)
                if stage is not None:
                    stage.remove(close=spec.type in CLOSES_ON_REMOVE)

    def reset(self) -> None:
        for direction in DIRECTIONS:
            while self.chain[direction]:
                self.remove(self.chain[direction][0])


# ------------------------------------------------------------------------ proxies


class Proxy:
    """One Toxiproxy proxy. ``listen`` holds the bound address once started."""

    def __init__(self, name: str, listen: str, upstream: str, rng: random.Random) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.toxics = ToxicCollection()
        self._rng = rng
        self._scope: trio.CancelScope | None = None
        self._stopped: trio.Event | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": self.toxics.to_json(),
        }

    async def start(self, nursery: trio.Nursery) -> None:
        """Listen; returns once bound. Raises OSError (or AddressError) if it cannot."""
        if self.enabled:
            return
        await nursery.start(self._serve)
        self.enabled = True

    async def stop(self) -> None:
        """Close the listener and every connection; returns when they are closed."""
        if not self.enabled:
            return
        self.enabled = False
        assert self._scope is not None and self._stopped is not None
        self._scope.cancel()
        await self._stopped.wait()

    async def _serve(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        host, port = parse_address(self.listen, default_host="127.0.0.1")
        listener = await bind_listener(host, port)
        self.listen = format_address(*listener_address(listener))
        self._stopped = stopped = trio.Event()
        try:
            with trio.CancelScope() as scope:
                self._scope = scope
                async with trio.open_nursery() as nursery:
                    task_status.started()
                    while True:
                        try:
                            client = await listener.accept()
                        except OSError:  # EMFILE and friends: back off, as Trio's serve_listeners
                            await trio.sleep(0.1)
                            continue
                        nursery.start_soon(self._handle, client)
        finally:
            listener.socket.close()
            stopped.set()

    async def _handle(self, client: trio.SocketStream) -> None:
        rng = random.Random(self._rng.getrandbits(64))  # one generator per connection
        try:
            host, port = parse_address(self.upstream)
            with trio.fail_after(UPSTREAM_DIAL_TIMEOUT_S):
                upstream = await trio.open_tcp_stream(host, port)
        except (OSError, trio.TooSlowError, ValueError):
            close_stream_now(client, reset=False)  # as Toxiproxy: drop the client
            return
        try:
            await _Connection(self, client, upstream, rng).run()
        except Exception:  # a bug must cost one connection, not the whole server
            LOGGER.exception("proxy %s: connection failed", self.name)


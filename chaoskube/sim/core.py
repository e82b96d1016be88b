"""What the runtime's parts see of each other; the World (world.py) composes them.

The network, the processes and their disks each need a little of the world — its clock,
its journal, its scheduler, each other — and the World needs all of them. So that the
import graph of ``sim`` has no circle, the parts refer back only to the protocols here:
a network and a process see a :class:`Runtime` (the World), a process sees a
:class:`Transport` (the network), the network sees :class:`Endpoint` s (processes), a disk
sees a :class:`Sleeper` (its process). ``core`` <- ``disk`` <- ``process`` <- ``world``;
``core`` <- ``network`` <- ``world``. :class:`Message`, the datum they pass, lives here too.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

#: A link endpoint that matches every process (``Network.set_link("*", dst, ...)``).
ANY = "*"
#: The port replies to calls arrive on.
REPLY_PORT = "\x00reply"


@dataclass(slots=True)
class Message:
    id: int
    src: str
    dst: str
    port: str
    body: Any
    sent_at: float
    call_id: int = 0  # nonzero: a request expecting a reply, or (port REPLY_PORT) the reply
    ok: bool = True  # for replies: False means the server answered with an error
    stream: str = ""  # the connection it rides, if the network knows it (a TCP stream)


class Endpoint(Protocol):
    """A process as the network delivers to it."""

    @property
    def running(self) -> bool: ...

    @property
    def paused(self) -> bool: ...

    def hold(self, callback: Callable[[Any], None], argument: Any) -> None: ...

    def receive_message(self, message: Message) -> None: ...


class Transport(Protocol):
    """The network as a process sends on it."""

    #: Calls that ride real TCP connections: retransmitted across a partition.
    tcp_calls: set[int]

    def send(self, src: str, dst: str, port: str, body: Any, *, call_id: int = 0, ok: bool = True, duplicable: bool = True, stream: str = "") -> int: ...

    def drop(self, message: Message, reason: str) -> None: ...


class Runtime(Protocol):
    """The World as the network and the processes see it."""

    now: float
    logger: Any
    network: Transport
    random: Callable[[str], random.Random]
    buggify: Any  # chaoskube.sim.buggify.Buggify: off unless a run started it

    @property
    def processes(self) -> Mapping[str, Endpoint]: ...

    def record(self, type: str, **fields: Any) -> None: ...  # noqa: A002 - the journal's field name

    def record_send(self, message_id: int, src: str, dst: str, port: str, kind: str) -> None: ...

    def record_deliver(self, message_id: int, src: str, dst: str) -> None: ...

    def call_at(self, when: float, callback: Callable[[Any], None], argument: Any = None) -> None: ...

    def next_call_id(self) -> int: ...

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None: ...


class Sleeper(Protocol):
    """A process as its disk waits on its clock."""

    async def sleep_world(self, seconds: float) -> None: ...

    def call_later_world(self, seconds: float, callback: Callable[[Any], None], argument: Any = None) -> None: ...

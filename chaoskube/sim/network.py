"""The simulated network: every message between components crosses it.

Delivery order is owned by the network, never by Trio's task order: each message gets a
delivery time drawn from its link's profile with the network's own seeded generator, and
is pushed onto the world's heap keyed by (time, sequence number).

Per link (``src -> dst``; ``"*"`` matches any endpoint): a delay distribution, loss,
duplication and reordering. Duplication applies only to datagram-like messages: requests,
replies and messages sent with ``duplicable=False`` ride on connections (TCP never
delivers twice). Links are FIFO like a TCP connection unless a message is
picked for reordering, which lets it overtake or fall behind. Partitions are a *grudge*
(Jepsen's term): for each destination, the sources whose messages it drops. The grudge is
checked when a message is sent and again when it is due, so a message in flight when its
link is cut is dropped at delivery.

A message that rides a real TCP connection is not lost to a partition, and one mechanism
carries every such message: a *TCP stream*, either named (:meth:`Network.open_tcp_stream`:
the HTTPS front's watch streams to real clients, each message sent with ``stream=``) or
implicit, the one-message stream of each request and each reply of a call that rides a
connection (``Process.call(..., tcp=True)``: the front's requests for real clients). Once a
partition cuts one of a stream's messages, that message and every later one of the stream
(sent meanwhile, or in flight) are held, in the order sent, behind the stream's one
retransmission timer: TCP retransmits an unacknowledged segment at a backoff that starts
at the minimum RTO (200 ms, ``TCP_RTO_MIN``), doubles, and is capped at 120 s
(``TCP_RTO_MAX``), each retransmission journaled ``retransmit`` (the held message's id, a
named stream's with its ``stream``). The first retransmission that finds the link whole
delivers them all, in order (a named stream's backlog behind what its link already
carries; a call's message after the link's base delay). TCP gives up when the next
retransmission would pass the stream's bound: ``tcp_retries2`` = 15 tries, about 924.6 s
(Linux ``include/net/tcp.h``; ``Documentation/networking/ip-sysctl.rst``), or a named
stream's own ``bound_s``. Then what the stream holds is dropped: a named stream's
connection is reset at the bound (journaled ``tcp-reset``; the stream's owner is told, and
closes it as a reset connection); a call's message is dropped at that retransmission, and
also at one that finds the link still cut after its call has ended (its deadline passed:
nobody waits for it any more).

What a destination that is not running does: a stopped process refuses connections, so a
call to it fails fast (``Failed``: it definitely did not happen); a message to a paused
process waits in the network until it resumes (SIGSTOP: the kernel keeps buffering).
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from chaoskube.sim.core import ANY, REPLY_PORT, Message, Runtime

__all__ = ["ANY", "REPLY_PORT", "TCP_GIVE_UP_S", "TCP_RTO_MAX_S", "TCP_RTO_MIN_S", "LinkProfile", "Message", "Network", "kind_of", "tcp_backoff"]

#: Linux's TCP retransmission timer (``include/net/tcp.h``: TCP_RTO_MIN = HZ/5,
#: TCP_RTO_MAX = 120*HZ) and the time after which it gives up on an established
#: connection with the default ``net.ipv4.tcp_retries2 = 15`` (ip-sysctl.rst: "a
#: hypothetical timeout of 924.6 seconds").
TCP_RTO_MIN_S = 0.2
TCP_RTO_MAX_S = 120.0
TCP_GIVE_UP_S = 924.6


def tcp_backoff(attempt: int) -> float:
    """The wait before retransmission ``attempt`` (0-based): 0.2 s doubling, capped at 120 s."""
    return min(TCP_RTO_MIN_S * (2 ** min(attempt, 20)), TCP_RTO_MAX_S)


@dataclass(slots=True)
class _TcpStream:
    """One TCP connection's stream (see the module docstring): the messages held behind
    its retransmission timer (in the order sent), and that timer's state. ``name`` is the
    stream's (:meth:`Network.open_tcp_stream`), or empty for the implicit stream of one
    message of a TCP call, whose ``call_id`` it is."""

    name: str
    bound_s: float
    on_reset: Callable[[], None] | None
    held: list[Message] = field(default_factory=list)
    first: float = 0.0  # when its oldest unacknowledged message was first cut
    attempt: int = 0
    call_id: int = 0


@dataclass(frozen=True, slots=True)
class LinkProfile:
    """How one link behaves. ``delay_s`` is the base one-way delay; ``jitter_s`` adds a
    random part drawn from ``distribution`` ("uniform": [0, jitter]; "exponential": mean
    jitter; "normal": |N(0, jitter)|). ``loss``, ``duplicate`` and ``reorder`` are
    probabilities per message; a reordered message gets up to ``reorder_window_s`` of
    extra delay and ignores the link's FIFO order."""

    delay_s: float = 0.0005
    jitter_s: float = 0.0005
    distribution: str = "uniform"
    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_window_s: float = 0.01

    def __post_init__(self) -> None:
        if self.distribution not in ("uniform", "exponential", "normal"):
            raise ValueError(f"unknown delay distribution {self.distribution!r}")
        for name in ("delay_s", "jitter_s", "reorder_window_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
        for name in ("loss", "duplicate", "reorder"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], not {value!r}")

    def with_(self, **changes: Any) -> LinkProfile:
        return replace(self, **changes)


#: Types whose instances have no ``kind`` attribute (slotted classes without one): the
#: label comes from ``type`` at once, skipping a failed lookup on every message.
_NO_KIND: dict[type, bool] = {}


def _has_no_kind(cls: type) -> bool:
    known = _NO_KIND.get(cls)
    if known is None:
        slotted = not hasattr(cls, "__dictoffset__") or cls.__dictoffset__ == 0
        known = _NO_KIND[cls] = slotted and cls is not dict and not hasattr(cls, "kind")
    return known


def kind_of(body: Any) -> str:
    """A short, deterministic label of a message body for the journal."""
    if _has_no_kind(type(body)):
        kind = getattr(body, "type", None)
        if kind is not None:
            return getattr(kind, "name", None) or str(kind)
        return type(body).__name__
    if isinstance(body, dict):
        kind = body.get("type") or body.get("kind")
        if kind is not None:
            return str(kind)
        return "dict"
    kind = getattr(body, "kind", None)
    if isinstance(kind, str):
        return kind
    kind = getattr(body, "type", None)
    if kind is not None:
        return getattr(kind, "name", None) or str(kind)
    return type(body).__name__


class Network:
    def __init__(self, world: Runtime, default: LinkProfile | None = None) -> None:
        self.world = world
        self.default = default or LinkProfile()
        self._links: dict[tuple[str, str], LinkProfile] = {}
        self._resolved: dict[tuple[str, str], LinkProfile] = {}
        self._last_due: dict[tuple[str, str], float] = {}
        self.grudge: dict[str, frozenset[str]] = {}
        #: Calls that ride real TCP connections (see the module docstring).
        self.tcp_calls: set[int] = set()
        #: Streams that ride real TCP connections, by name (see the module docstring).
        self.tcp_streams: dict[str, _TcpStream] = {}
        self._random = world.random("network")
        self._next_id = 0
        self.sent = 0
        self.delivered = 0
        self.dropped = 0

    # -- configuration ------------------------------------------------------------------
    def set_link(self, src: str, dst: str, profile: LinkProfile | None) -> None:
        """Set (or with None, clear) the profile of ``src -> dst``; either may be ``"*"``."""
        if profile is None:
            self._links.pop((src, dst), None)
        else:
            self._links[(src, dst)] = profile
        self._resolved.clear()

    def link_override(self, src: str, dst: str) -> LinkProfile | None:
        """The profile set for exactly ``src -> dst`` (wildcards literal), if any."""
        return self._links.get((src, dst))

    def link(self, src: str, dst: str) -> LinkProfile:
        key = (src, dst)
        profile = self._resolved.get(key)
        if profile is None:
            links = self._links
            profile = (
                links.get(key)
                or links.get((src, ANY))
                or links.get((ANY, dst))
                or links.get((ANY, ANY))
                or self.default
            )
            self._resolved[key] = profile
        return profile

    def partition(self, grudge: dict[str, frozenset[str] | set[str]]) -> None:
        """Replace the grudge: ``grudge[dst]`` is the set of sources ``dst`` drops."""
        self.grudge = {dst: frozenset(sources) for dst, sources in sorted(grudge.items()) if sources}
        self.world.record("partition", grudge={dst: sorted(s) for dst, s in self.grudge.items()})

    def heal(self) -> None:
        """Remove every partition. Idempotent."""
        if self.grudge:
            self.grudge = {}
            self.world.record("partition", grudge={})

    def cut(self, src: str, dst: str) -> bool:
        sources = self.grudge.get(dst)
        return sources is not None and src in sources

    # -- TCP streams --------------------------------------------------------------------
    def open_tcp_stream(self, name: str, *, bound_s: float = TCP_GIVE_UP_S, on_reset: Callable[[], None] | None = None) -> None:
        """From now on the messages sent with ``stream=name`` ride one TCP connection: held
        in order across a partition and retransmitted, the connection reset (``on_reset``
        called) when a partition outlasts ``bound_s``."""
        self.tcp_streams[name] = _TcpStream(name, bound_s, on_reset)

    def close_tcp_stream(self, name: str) -> None:
        """The connection is closed: what it still held is lost with it."""
        stream = self.tcp_streams.pop(name, None)
        if stream is not None:
            held, stream.held = stream.held, []
            for message in held:
                self.drop(message, "partition")

    def _hold(self, stream: _TcpStream, message: Message) -> None:
        """Hold ``message`` behind the stream's retransmission timer, in the order sent."""
        insort(stream.held, message, key=lambda held: held.id)
        if len(stream.held) == 1:
            stream.first = self.world.now
            stream.attempt = 0
            self._arm(stream)

    def _arm(self, stream: _TcpStream) -> None:
        """The next retransmission of the stream's oldest held message, at TCP's backoff,
        unless TCP gives up: when that retransmission would pass the bound (a named
        stream's connection is reset at the bound; a call's message is dropped at once),
        or, a call's message, when its call has ended (nobody waits for it any more)."""
        now = self.world.now
        wait = tcp_backoff(stream.attempt)
        if now + wait - stream.first > stream.bound_s or (stream.call_id and stream.call_id not in self.tcp_calls):
            if stream.name:
                self.world.call_at(max(now, stream.first + stream.bound_s), self._give_up, stream)
            else:
                self._give_up(stream)
            return
        stream.attempt += 1
        head = stream.held[0]
        fields: dict[str, Any] = {"id": head.id, "src": head.src, "dst": head.dst, "attempt": stream.attempt, "after_s": round(now + wait - stream.first, 6)}
        if stream.name:
            fields["stream"] = stream.name
        self.world.record("retransmit", **fields)
        self.world.call_at(now + wait, self._retransmit, stream)

    def _closed(self, stream: _TcpStream) -> bool:
        """Nothing held any more (delivered, or given up), or a named stream closed
        meanwhile: what it held went with it."""
        return not stream.held or (bool(stream.name) and self.tcp_streams.get(stream.name) is not stream)

    def _retransmit(self, stream: _TcpStream) -> None:
        if self._closed(stream):
            return
        head = stream.held[0]
        if self.cut(head.src, head.dst):
            self._arm(stream)
            return
        held, stream.held = stream.held, []
        due = self.world.now + self.link(head.src, head.dst).delay_s
        if stream.name:  # the stream's backlog follows what its link already carries
            key = (head.src, head.dst)
            due = max(due, self._last_due.get(key, 0.0))
            self._last_due[key] = due
        for message in held:  # acknowledged at last: the whole backlog follows, in order
            self.world.call_at(due, self._deliver, message)

    def _give_up(self, stream: _TcpStream) -> None:
        """TCP gave up on the stream: what it held is dropped; a named stream's connection
        is reset (journaled ``tcp-reset``, closed, its owner told)."""
        if self._closed(stream):
            return
        held, stream.held = stream.held, []
        if stream.name:
            head = held[0]
            self.world.record("tcp-reset", stream=stream.name, src=head.src, dst=head.dst, after_s=round(self.world.now - stream.first, 6), lost=len(held))
            del self.tcp_streams[stream.name]
        for message in held:
            self.drop(message, "partition")
        if stream.on_reset is not None:
            stream.on_reset()

    # -- sending ------------------------------------------------------------------------
    def send(self, src: str, dst: str, port: str, body: Any, *, call_id: int = 0, ok: bool = True, duplicable: bool = True, stream: str = "") -> int:
        """Put a message on the wire; returns its id. Never blocks. Requests, replies and
        messages sent with ``duplicable=False`` ride on connections, which never deliver
        twice: link duplication does not apply to them. ``stream``: the TCP stream it
        rides, if one was opened by that name (:meth:`open_tcp_stream`)."""
        world = self.world
        self._next_id += 1
        message_id = self._next_id
        now = world.now
        message = Message(message_id, src, dst, port, body, now, call_id, ok, stream)
        self.sent += 1
        world.record_send(message_id, src, dst, port, kind_of(body))
        if stream and self.tcp_streams:
            tcp = self.tcp_streams.get(stream)
            if tcp is not None and tcp.held:
                self._hold(tcp, message)  # behind the bytes not yet acknowledged
                return message_id
        sources = self.grudge.get(dst)
        if sources is not None and src in sources:
            self._partitioned(message)
            return message_id
        profile = self.link(src, dst)
        rng = self._random
        if profile.loss and rng.random() < profile.loss:
            self.drop(message, "loss")
            return message_id
        copies = 2 if profile.duplicate and duplicable and not call_id and rng.random() < profile.duplicate else 1
        for _ in range(copies):
            delay = profile.delay_s
            if profile.jitter_s:
                if profile.distribution == "uniform":
                    delay += rng.random() * profile.jitter_s
                elif profile.distribution == "exponential":
                    delay += rng.expovariate(1.0 / profile.jitter_s)
                else:
                    delay += abs(rng.gauss(0.0, profile.jitter_s))
            due = now + delay
            if profile.reorder and rng.random() < profile.reorder:
                due += rng.random() * profile.reorder_window_s
            else:
                key = (src, dst)
                last = self._last_due.get(key, 0.0)
                if due < last:
                    due = last
                self._last_due[key] = due
            world.call_at(due, self._deliver, message)
        return message_id

    def drop(self, message: Message, reason: str) -> None:
        """Journal ``message`` as dropped, for ``reason``."""
        self.dropped += 1
        self.world.record("drop", id=message.id, src=message.src, dst=message.dst, reason=reason)

    def _partitioned(self, message: Message) -> None:
        """A partition cuts ``message``'s link: dropped, unless it rides a TCP connection:
        held behind its stream's retransmission timer, a named stream's or (a TCP call's
        request or reply) its own one-message stream's."""
        if message.stream and self.tcp_streams:
            stream = self.tcp_streams.get(message.stream)
            if stream is not None:
                self._hold(stream, message)
                return
        if message.call_id and message.call_id in self.tcp_calls:
            self._hold(_TcpStream("", TCP_GIVE_UP_S, None, call_id=message.call_id), message)
            return
        self.drop(message, "partition")

    def _deliver(self, message: Message) -> None:
        world = self.world
        sources = self.grudge.get(message.dst)
        if sources is not None and message.src in sources:
            self._partitioned(message)
            return
        if message.stream and self.tcp_streams:
            stream = self.tcp_streams.get(message.stream)
            if stream is not None and stream.held:
                self._hold(stream, message)  # in flight when the stream began to be held: stays behind
                return
        process = world.processes.get(message.dst)
        if process is None or not process.running:
            if process is not None and process.paused:
                process.hold(self._deliver, message)
                return
            self.drop(message, "down")
            if message.call_id and message.port != REPLY_PORT:
                # A stopped process refuses the connection: the caller learns at once
                # (after the return trip) that the request did not happen.
                self.send(message.dst, message.src, REPLY_PORT, "connection refused", call_id=message.call_id, ok=False)
            return
        self.delivered += 1
        world.record_deliver(message.id, message.src, message.dst)
        process.receive_message(message)

    def statistics(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "delivered": self.delivered,
            "dropped": self.dropped,
            "partitioned_destinations": len(self.grudge),
        }

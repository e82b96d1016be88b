"""What each toxic does to one direction of one proxied connection.

The types, attributes and defaults are Toxiproxy 2.x's (github.com/Shopify/toxiproxy,
``toxics/*.go``), plus one chaoskube extension, ``chaoskube_block_from`` (see
docs/toxiproxy.md).

Two layers:

* pure helpers — attribute parsing and validation, the latency draw, the slicer's cut
  points — that take their randomness as an argument and are table-tested;
* one ``pipe_*`` coroutine per type, run by a *stage* of a link (proxy.py). A pipe
  looks at the head of its stage's input, waits (Trio time only), then moves bytes
  to the output with a synchronous call. Data therefore sits either in the input or
  in the output at every checkpoint, which is what lets the proxy interrupt a pipe at
  any await (toxic updated or removed) without losing or duplicating a byte.

The stage interface a pipe may use (implemented by ``proxy._Stage``)::

    await stage.peek()            -> Chunk | END   head of the input, not removed
    await stage.wait_for_space()                   until the output takes one more item
    await stage.wait_for_second() -> bool          until the input holds two items
    stage.forward(nbytes=None)                     move the head (or its first nbytes) out
    stage.drop()                                   discard the head
    stage.merge_head()                             join the first two chunks of the input
    stage.close_stream()                           end this direction here (as stub.Close())
    stage.abort_connection()                       reset both sockets (RST) now
    stage.spec, stage.rng, stage.state             the toxic, its generator, per-stage state
    stage.joined_mid_stream, stage.first_request   for chaoskube_block_from (proxy.py)

A pipe returns when the stream has ended at its stage (END passed on, or closed).
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

import h11
import trio

UPSTREAM = "upstream"
DOWNSTREAM = "downstream"
DIRECTIONS = (UPSTREAM, DOWNSTREAM)  # Toxiproxy's order: upstream toxics list first

BLOCK_FROM = "chaoskube_block_from"

# type -> attribute defaults. Integer attributes are Go int64/int in Toxiproxy, so a
# float or a string there is a 400, as json.Unmarshal makes it.
ATTRIBUTE_DEFAULTS: dict[str, dict[str, Any]] = {
    "noop": {},
    "latency": {"latency": 0, "jitter": 0},
    "bandwidth": {"rate": 0},
    "slow_close": {"delay": 0},
    "timeout": {"timeout": 0},
    "reset_peer": {"timeout": 0},
    "slicer": {"average_size": 0, "size_variation": 0, "delay": 0},
    "limit_data": {"bytes": 0},
    BLOCK_FROM: {"header": "X-Server-From", "values": []},
}
TOXIC_TYPES = tuple(ATTRIBUTE_DEFAULTS)

# Input buffer of a stage, in chunks (Toxiproxy: latency 1024, every other 0; a
# Trio buffer needs at least one slot, and chaoskube_block_from two, to join a request
# head that arrived in pieces). At the bound the previous stage waits, and so, in the
# end, does the socket reader: back-pressure, never unbounded growth.
BUFFER_CHUNKS = {"latency": 1024, BLOCK_FROM: 2}

# Removing these closes the stream instead of letting data through (Toxiproxy's
# CleanupToxic: timeout.go closes the stub when the toxic is removed).
CLOSES_ON_REMOVE = frozenset({"timeout"})

# How much of an HTTP request head chaoskube_block_from holds back before giving up
# and passing the connection through untouched.
BLOCK_FROM_MAX_HEAD_BYTES = 64 * 1024


class ToxicError(Exception):
    """A toxic the API must refuse; ``status`` is the HTTP code Toxiproxy answers."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class _End:
    """End of stream marker (Toxiproxy sends a nil chunk)."""

    _instance: _End | None = None

    def __new__(cls) -> _End:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "END"


END = _End()


class Chunk:
    """Bytes read from a socket, stamped with the Trio time they were read."""

    __slots__ = ("data", "timestamp")

    def __init__(self, data: bytes, timestamp: float) -> None:
        assert data, "empty chunks are never queued"
        self.data = data
        self.timestamp = timestamp

    def __repr__(self) -> str:
        return f"Chunk({len(self.data)} bytes @ {self.timestamp:.3f})"


@dataclasses.dataclass
class ToxicSpec:
    """One toxic as the API shows it (Toxiproxy's ToxicWrapper).

    ``stream`` keeps the spelling the client used, as Toxiproxy does; ``direction`` is
    the normalised one. ``attributes`` is replaced, never mutated, on update, so a
    running pipe keeps a consistent view until it is restarted.
    """

    name: str
    type: str
    stream: str
    direction: str
    toxicity: float
    attributes: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "attributes": dict(self.attributes),
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
        }


# ---------------------------------------------------------------- parsing (pure)


#: The Go struct each toxic's attributes decode into (Shopify/toxiproxy ``toxics/*.go``),
#: as its JSON errors name it, and the Go type of each numeric attribute (``int64``, or
#: ``int`` for the slicer's: 64 bits on the platforms Toxiproxy ships for).
GO_STRUCTS: dict[str, str] = {
    "noop": "NoopToxic", "latency": "LatencyToxic", "bandwidth": "BandwidthToxic", "slow_close": "SlowCloseToxic",
    "timeout": "TimeoutToxic", "reset_peer": "ResetToxic", "slicer": "SlicerToxic", "limit_data": "LimitDataToxic",
    BLOCK_FROM: "BlockFromToxic",
}  # fmt: skip
GO_INT_TYPES: dict[str, str] = {"slicer": "int"}
INT64 = (-(2**63), 2**63 - 1)
FLOAT32_MAX = 3.4028234663852886e38


class GoInt(int):
    """An integer as decoded from a JSON body, with its literal (``literal``), so errors
    can quote it as Go's encoding/json does ("number 9223372036854775808")."""

    literal: str


class GoFloat(float):
    """A JSON number with a fraction or an exponent, with its literal."""

    literal: str


def go_number(literal: str) -> GoInt | GoFloat:
    """``parse_int`` / ``parse_float`` of json.loads: the number and its literal."""
    number: GoInt | GoFloat = GoFloat(literal) if any(c in literal for c in ".eE") else GoInt(literal)
    number.literal = literal
    return number


def _literal(value: Any) -> str:
    return getattr(value, "literal", None) or repr(value)


def json_kind(value: Any, numeric_target: bool = False) -> str:
    """How Go's UnmarshalTypeError names a JSON value: a number's literal is quoted only
    when the target is numeric (``literalStore``: "number 1.5" into an int64, "number" into
    a string)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return f"number {_literal(value)}" if numeric_target else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_json_kind = json_kind


def _bad_field(struct: str, field: str, value: Any, go_type: str) -> ToxicError:
    numeric = go_type in ("int64", "int", "float32")
    return ToxicError(
        f"bad request body: json: cannot unmarshal {json_kind(value, numeric and isinstance(value, (int, float)) and not isinstance(value, bool))} into Go struct "
        f"field {struct}.{field} of type {go_type}"
    )


def go_int64(value: Any) -> bool:
    """Whether a decoded JSON value is what Go decodes into an int64: an integer literal
    (no fraction, no exponent) within 64 bits."""
    return isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]


def go_float32(value: Any) -> bool:
    """Whether a decoded JSON number fits a float32 (``strconv.ParseFloat(s, 32)``)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(float(value)) <= FLOAT32_MAX


def lookup_field(obj: dict[str, Any], field: str) -> tuple[bool, Any]:
    """Find ``field`` in a decoded JSON object the way Go's encoding/json does:
    an exact key first, else a case-insensitive one. Returns (found, value)."""
    if field in obj:
        return True, obj[field]
    lowered = field.lower()
    for key, value in obj.items():
        if key.lower() == lowered:
            return True, value
    return False, None


def merge_attributes(toxic_type: str, base: dict[str, Any], given: Any) -> dict[str, Any]:
    """Return ``base`` overlaid with the client's ``attributes`` object.

    Unknown keys are ignored and ``null`` leaves a value alone, as Go's decoder does;
    a wrongly typed value raises ToxicError (400).
    """
    assert toxic_type in ATTRIBUTE_DEFAULTS, toxic_type
    result = dict(base)
    if given is None:
        return result
    if not isinstance(given, dict):
        raise ToxicError(
            f"bad request body: json: cannot unmarshal {_json_kind(given)} into Go struct "
            f"field ToxicWrapper.attributes of type toxics.Toxic"
        )
    struct = f"{GO_STRUCTS[toxic_type]}.attributes"
    for field, default in ATTRIBUTE_DEFAULTS[toxic_type].items():
        found, value = lookup_field(given, field)
        if not found or value is None:
            continue
        if isinstance(default, int):
            if not go_int64(value):
                raise _bad_field(struct, field, value, GO_INT_TYPES.get(toxic_type, "int64"))
            result[field] = int(value)
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise _bad_field(struct, field, value, "string")
            result[field] = value
        else:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _bad_field(struct, field, value, "[]string")
            result[field] = list(value)
    return result


def parse_direction(stream: str) -> str:
    """Toxiproxy's stream.ParseDirection: case-insensitive, else 400."""
    lowered = stream.lower()
    if lowered not in DIRECTIONS:
        raise ToxicError("stream was invalid, can be either upstream or downstream")
    return lowered


# ------------------------------------------------------------ random draws (pure)


def draw_applies(toxicity: float, rng: random.Random) -> bool:
    """Whether a toxic acts on one link (one direction of one connection).

    Toxiproxy draws ``rand.Float32() < toxicity`` each time a stub starts running the
    toxic; we draw when the toxic is attached to the link and again when it is updated.
    """
    return rng.random() < toxicity


def latency_delay_s(latency_ms: int, jitter_ms: int, rng: random.Random) -> float:
    """latency ± jitter in seconds: Go's ``latency + rand.Int63n(2*jitter) - jitter``,
    so the result lies in [latency - jitter, latency + jitter)."""
    delay_ms = latency_ms
    if jitter_ms > 0:
        delay_ms += rng.randrange(2 * jitter_ms) - jitter_ms
    return delay_ms / 1000.0


def slice_sizes(total: int, average_size: int, size_variation: int, rng: random.Random) -> list[int]:
    """Sizes the slicer cuts ``total`` bytes into (toxics/slicer.go ``chunk``).

    Halve recursively, moving the cut by up to ±size_variation, until a piece is at most
    average_size + size_variation. Differences from Go, where Go would crash: a
    variation of 0 cuts exactly in half (Go's rand.Intn(0) panics) and an average below
    1 is taken as 1 (Go recurses forever); cuts stay strictly inside the piece.
    """
    assert total >= 0
    average = max(1, average_size)
    variation = max(0, size_variation)
    sizes: list[int] = []
    pending = [(0, total)]  # explicit stack, left piece on top: sizes come out in order
    while pending:
        start, end = pending.pop()
        if (end - start) - average <= variation:
            if end > start:
                sizes.append(end - start)
            continue
        shift = rng.randrange(2 * variation) - variation if variation > 0 else 0
        mid = start + (end - start) // 2 + shift
        mid = min(max(mid, start + 1), end - 1)
        pending.append((mid, end))
        pending.append((start, mid))
    assert sum(sizes) == total
    return sizes


# ------------------------------------------------------------------------- pipes


async def pipe_noop(stage: Any) -> None:
    while True:
        item = await stage.peek()
        await stage.wait_for_space()
        stage.forward()
        if item is END:
            return


async def pipe_latency(stage: Any) -> None:
    attributes = stage.spec.attributes
    while True:
        item = await stage.peek()
        if item is not END:
            # Measured from when the bytes were read, as Toxiproxy 2.x does, so a
            # restarted pipe does not add the latency twice.
            delay_s = latency_delay_s(attributes["latency"], attributes["jitter"], stage.rng)
            await trio.sleep_until(item.timestamp + delay_s)
        await stage.wait_for_space()
        stage.forward()
        if item is END:
            return


async def pipe_bandwidth(stage: Any) -> None:
    rate = stage.spec.attributes["rate"]  # KB/s, i.e. bytes per millisecond
    due = trio.current_time()
    while True:
        item = await stage.peek()
        if item is END or rate <= 0:
            await stage.wait_for_space()
            stage.forward()
            if item is END:
                return
            continue
        # Pieces of at most 100 ms worth, each sent once its time has been paid
        # (bandwidth.go). An idle link earns no credit for a later burst.
        piece = min(len(item.data), rate * 100)
        due = max(due, trio.current_time()) + piece / (rate * 1000.0)
        await trio.sleep_until(due)
        await stage.wait_for_space()
        stage.forward(piece)


async def pipe_slow_close(stage: Any) -> None:
    delay_s = max(0, stage.spec.attributes["delay"]) / 1000.0
    while True:
        item = await stage.peek()
        if item is END:
            await trio.sleep(delay_s)
        await stage.wait_for_space()
        stage.forward()
        if item is END:
            return


async def pipe_timeout(stage: Any) -> None:
    # timeout.go: data is dropped; after `timeout` ms (never, if 0) the stream closes.
    # The clock starts when the toxic starts on the link, not at the first byte.
    timeout_ms = stage.spec.attributes["timeout"]
    deadline = trio.current_time() + timeout_ms / 1000.0 if timeout_ms > 0 else math.inf
    while True:
        item = None
        with trio.move_on_at(deadline) as scope:
            item = await stage.peek()
        if scope.cancelled_caught or item is END:
            stage.close_stream()
            return
        stage.drop()


async def pipe_reset_peer(stage: Any) -> None:
    # reset_peer.go: on the first input (data or end), wait `timeout` ms, then reset.
    # Nothing is forwarded meanwhile.
    await stage.peek()
    await trio.sleep(max(0, stage.spec.attributes["timeout"]) / 1000.0)
    stage.abort_connection()


async def pipe_slicer(stage: Any) -> None:
    attributes = stage.spec.attributes
    delay_s = max(0, attributes["delay"]) / 1_000_000.0
    while True:
        item = await stage.peek()
        if item is END:
            await stage.wait_for_space()
            stage.forward()
            return
        sizes = slice_sizes(len(item.data), attributes["average_size"], attributes["size_variation"], stage.rng)
        for size in sizes:
            await stage.wait_for_space()
            stage.forward(size)
            await trio.sleep(delay_s)


async def pipe_limit_data(stage: Any) -> None:
    limit = stage.spec.attributes["bytes"]
    state = stage.state  # survives restarts of the pipe, as Toxiproxy's StatefulToxic
    state.setdefault("transmitted", 0)
    while True:
        item = await stage.peek()
        if item is END:
            stage.close_stream()
            return
        allowed = min(max(0, limit - state["transmitted"]), len(item.data))
        if allowed > 0:
            await stage.wait_for_space()
            stage.forward(allowed)
            state["transmitted"] += allowed
        if allowed < len(item.data):
            stage.drop()
        if limit - state["transmitted"] <= 0:
            stage.close_stream()
            return


class _RequestInspector:
    """Finds the head of every HTTP/1.x request on a client→server byte stream.

    h11 parses the client's side; after each request we feed it a dummy response so
    it moves on to the next request of a kept-alive connection. Anything h11 cannot
    follow (not HTTP, TLS, a protocol switch, a closing connection) ends inspection.
    """

    def __init__(self) -> None:
        self.connection = h11.Connection(h11.SERVER, max_incomplete_event_size=BLOCK_FROM_MAX_HEAD_BYTES)
        self.inspecting = True

    def feed(self, data: bytes) -> list[h11.Request]:
        """Feed bytes; return the request heads they completed."""
        requests: list[h11.Request] = []
        if not self.inspecting:
            return requests
        try:
            self.connection.receive_data(data)
            while True:
                event = self.connection.next_event()
                if event is h11.NEED_DATA:
                    break
                if isinstance(event, h11.Request):
                    requests.append(event)
                elif isinstance(event, h11.EndOfMessage):
                    self.connection.send(h11.Response(status_code=204, headers=[]))
                    self.connection.send(h11.EndOfMessage())
                    self.connection.start_next_cycle()
                elif event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                    self.inspecting = False
                    break
        except h11.ProtocolError:
            self.inspecting = False
        return requests

    def head_incomplete(self) -> bool:
        """True while the bytes fed so far end inside a request head."""
        if not self.inspecting or self.connection.their_state is not h11.IDLE:
            return False
        pending, _ = self.connection.trailing_data
        return bool(pending)


class FirstRequestRecorder:
    """Remembers the head of the first HTTP request of a connection.

    Every upstream link keeps one, fed by its reader before any toxic sees the bytes,
    so a chaoskube_block_from toxic added to a *live* connection can still judge who
    dialed it (an etcd stream connection sends its one request head at the start and
    then only receives). Cheap: it stops at the first head, at 64 KiB, or at the first
    byte that is not HTTP/1.x.
    """

    def __init__(self) -> None:
        self._inspector: _RequestInspector | None = _RequestInspector()
        self.request: h11.Request | None = None

    @property
    def pending(self) -> bool:
        return self._inspector is not None

    def feed(self, data: bytes) -> None:
        if self._inspector is None:
            return
        requests = self._inspector.feed(data)
        if requests:
            self.request = requests[0]
        if requests or not self._inspector.inspecting:
            self._inspector = None  # decided: free the parser and its buffer


def header_blocked(request: h11.Request, header: str, values: list[str]) -> bool:
    wanted = header.strip().lower().encode("latin-1", "replace")
    listed = {value.strip() for value in values}
    for name, value in request.headers:
        if name == wanted and value.decode("latin-1").strip() in listed:
            return True
    return False


async def pipe_block_from(stage: Any) -> None:
    """chaoskube extension: reset the connection when a request's header is listed.

    Holds back the bytes of an incomplete request head, so the upstream never sees a
    request it should not; the rest of the stream is forwarded as it comes.
    """
    attributes = stage.spec.attributes
    if stage.joined_mid_stream:
        await _block_from_mid_stream(stage)
        return
    state = stage.state
    if "inspector" not in state:
        state["inspector"] = _RequestInspector()
        state["fed"] = 0  # bytes of the head chunk already given to the inspector
    inspector: _RequestInspector = state["inspector"]
    while True:
        item = await stage.peek()
        if item is END:
            await stage.wait_for_space()
            stage.forward()
            return
        if state["fed"] < len(item.data):
            requests = inspector.feed(item.data[state["fed"] :])
            state["fed"] = len(item.data)
            if any(header_blocked(r, attributes["header"], attributes["values"]) for r in requests):
                stage.abort_connection()
                return
        if inspector.head_incomplete():
            if await stage.wait_for_second():
                stage.merge_head()  # `fed` still counts a prefix of the merged chunk
                continue
        await stage.wait_for_space()
        stage.forward()
        state["fed"] = 0


async def _block_from_mid_stream(stage: Any) -> None:
    """A block_from toxic added to a live connection cannot find request boundaries in
    the middle of the stream, so it judges the connection by its first request, which
    the link recorded (holding the rest of that head back while it is incomplete), and
    then lets everything through."""
    attributes = stage.spec.attributes
    recorder: FirstRequestRecorder = stage.first_request
    # At once, not at the next byte: a stream connection may never send another one.
    if recorder.request is not None and header_blocked(recorder.request, attributes["header"], attributes["values"]):
        stage.abort_connection()
        return
    while True:
        item = await stage.peek()
        if item is not END:
            if recorder.request is not None:
                if header_blocked(recorder.request, attributes["header"], attributes["values"]):
                    stage.abort_connection()
                    return
            elif recorder.pending and await stage.wait_for_second():
                stage.merge_head()
                continue
        await stage.wait_for_space()
        stage.forward()
        if item is END:
            return


PIPES = {
    "noop": pipe_noop,
    "latency": pipe_latency,
    "bandwidth": pipe_bandwidth,
    "slow_close": pipe_slow_close,
    "timeout": pipe_timeout,
    "reset_peer": pipe_reset_peer,
    "slicer": pipe_slicer,
    "limit_data": pipe_limit_data,
    BLOCK_FROM: pipe_block_from,
}
assert set(PIPES) == set(ATTRIBUTE_DEFAULTS)

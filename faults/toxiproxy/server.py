"""The Toxiproxy 2.x HTTP API, served with Trio and h11.

Endpoints, status codes, defaults and error bodies are those of Shopify/toxiproxy
``api.go`` (``{"error": "...", "status": N}``; 400 bad body or missing field, 404
proxy/toxic not found, 409 already exists, 500 for errors Toxiproxy does not classify,
such as a listen address that is malformed or already in use). Mutating requests are
serialised by one lock, as Toxiproxy's collection mutex serialises them.

Bodies are decoded as Go's ``encoding/json`` ``Decoder.Decode`` decodes them
(:func:`decode_go_json`): one JSON value, what follows it ignored; ``NaN`` and
``Infinity`` are not JSON; numbers into ``int64`` fields must be integer literals within
64 bits and into ``float32`` fields within its range, else 400 with Go's "cannot unmarshal
number N into Go struct field ..."; nesting deeper than Go's 10,000 levels is 400
("exceeded max depth"), shallower nesting decodes (never a 500); invalid UTF-8 is
replaced by U+FFFD. A body over :data:`MAX_REQUEST_BODY_BYTES` is answered 413 (Toxiproxy
reads any size; a bound on memory here).

Connections (``net/http.Server`` as api.go configures it): a request, headers and body,
must arrive within :data:`REQUEST_READ_TIMEOUT_S` (``ReadTimeout``, 15 s); a keep-alive
connection may wait :data:`IDLE_TIMEOUT_S` for its next request (``IdleTimeout``, 60 s);
the answer must be written within :data:`WRITE_TIMEOUT_S` (``WriteTimeout``, 30 s); a
handler that takes longer than :data:`HANDLER_TIMEOUT_S` is answered 503 (api.go's
``TimeoutHandler``, 25 s). Each bound closes that one connection; nothing that happens on
one connection — a timeout, a protocol error, a bug — reaches the server or any other
connection: every connection runs in its own task that catches everything but
cancellation. An idle connection holds only a file descriptor; ``run_forever`` raises the
open-file limit as a Go program does, so idle clients do not exhaust descriptors and stall
accept (issue 32: liveness under load, docs/toxiproxy.md).

Entry points:

* ``serve(host, port, *, rng)`` — run inside Trio; ``task_status.started((host, port))``
  reports the bound API address. Cancelling it closes every listener and connection.
* ``run_forever(listen, seed)`` — blocking, for the command line; SIGINT/SIGTERM stop it;
  :class:`ListenError` (one line) when it cannot listen there.
* ``ToxiproxyServer`` — the same in a background thread with its own ``trio.run``, for
  tests and for code that is not async.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import re
import signal
import socket
import sys
import threading
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote, urlsplit

import h11
import trio

from chaoskube.faults.toxiproxy.proxy import AddressError, Proxy, bind_listener, close_stream_now, format_address, listener_address, parse_address
from chaoskube.faults.toxiproxy.toxics import ATTRIBUTE_DEFAULTS, BLOCK_FROM, UPSTREAM, ToxicError, ToxicSpec, go_float32, go_number, json_kind, lookup_field, merge_attributes, parse_direction

LOGGER = logging.getLogger(__name__)

VERSION = "2.12.0-chaoskube"  # the Toxiproxy API version this server follows

MAX_REQUEST_BODY_BYTES = 1024 * 1024
REQUEST_READ_TIMEOUT_S = 15.0  # Toxiproxy's http.Server ReadTimeout (api.go read_timeout)
IDLE_TIMEOUT_S = 60.0  # and its IdleTimeout
WRITE_TIMEOUT_S = 30.0  # and its WriteTimeout (api.go wait_timeout)
HANDLER_TIMEOUT_S = 25.0  # api.go timeoutMiddleware: http.TimeoutHandler(next, 25*time.Second, "")
GO_MAX_JSON_DEPTH = 10_000  # encoding/json scanner.go maxNestingDepth
DEFAULT_LISTEN = "127.0.0.1:0"  # a proxy created without `listen`; never all interfaces


class ListenError(Exception):
    """The API cannot listen on the address given; ``str(error)`` is one line."""


class ApiError(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _err(message: str, status: int) -> ApiError:
    return ApiError(message, status)


ERR_PROXY_NOT_FOUND = ("proxy not found", 404)
ERR_PROXY_EXISTS = ("proxy already exists", 409)
ERR_TOXIC_NOT_FOUND = ("toxic not found", 404)
ERR_TOXIC_EXISTS = ("toxic already exists", 409)
ERR_INVALID_TOXIC_TYPE = ("invalid toxic type", 400)


# --------------------------------------------------------------- request bodies


_JSON_SPACE = re.compile(r"[ \t\r\n]*")


def _no_constants(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


_DECODER = json.JSONDecoder(parse_int=go_number, parse_float=go_number, parse_constant=_no_constants)


def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text``, outside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def decode_go_json(body: bytes) -> Any:
    """The first JSON value of ``body``, as ``json.NewDecoder(body).Decode`` reads it
    (module docstring); ApiError 400 ``bad request body: ...`` otherwise."""
    text = body.decode("utf-8", "replace")
    start = _JSON_SPACE.match(text).end()  # type: ignore[union-attr]
    if start == len(text):
        raise _err("bad request body: EOF", 400)
    try:
        return _DECODER.raw_decode(text, start)[0]
    except RecursionError:
        pass  # deeper than Python's stack allows by default; Go allows 10,000 levels
    except ValueError as error:
        raise _err(f"bad request body: {error}", 400) from None
    depth = _depth(text[start:])
    if depth > GO_MAX_JSON_DEPTH:
        first = text[start:].lstrip()[:1] or "["
        raise _err(f"bad request body: invalid character {first!r} exceeded max depth", 400)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, depth * 2 + 200))
    try:
        return _DECODER.raw_decode(text, start)[0]
    except (ValueError, RecursionError) as error:
        raise _err(f"bad request body: {error}", 400) from None
    finally:
        sys.setrecursionlimit(limit)


def _decode_body(body: bytes, go_type: str, want: type) -> Any:
    """json.NewDecoder(body).Decode(&v), error texts included as far as they matter."""
    value = decode_go_json(body)
    if value is not None and not isinstance(value, want):
        kind = "array" if isinstance(value, list) else "object" if isinstance(value, dict) else json_kind(value)
        raise _err(f"bad request body: json: cannot unmarshal {kind} into Go value of type {go_type}", 400)
    return value


def _field(obj: dict[str, Any], name: str, kind: type, struct: str, default: Any) -> Any:
    found, value = lookup_field(obj, name)
    if not found or value is None:
        return default
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        go = {str: "string", bool: "bool", float: "float32"}[kind]
        raise _err(f"bad request body: json: cannot unmarshal {json_kind(value)} into Go struct field {struct}.{name} of type {go}", 400)
    return value


def _proxy_fields(obj: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": _field(obj, "name", str, "Proxy", defaults.get("name", "")),
        "listen": _field(obj, "listen", str, "Proxy", defaults.get("listen", "")),
        "upstream": _field(obj, "upstream", str, "Proxy", defaults.get("upstream", "")),
        "enabled": _field(obj, "enabled", bool, "Proxy", defaults.get("enabled", True)),
    }


def _check_addresses(fields: dict[str, Any], where: str = "") -> None:
    """Toxiproxy checks neither address when a proxy is created: the listen address fails
    when the proxy starts (``net.Listen``: 500, below) and the upstream when a client
    connects (the client is dropped). Nothing to do here; kept as the one place to say so."""


def _toxicity(value: Any, struct: str = "ToxicWrapper") -> float:
    if not go_float32(value):
        raise _err(f"bad request body: json: cannot unmarshal {json_kind(value, isinstance(value, (int, float)) and not isinstance(value, bool))} into Go struct field {struct}.toxicity of type float32", 400)
    return float(value)


# --------------------------------------------------------------------- the API


class ToxiproxyApi:
    """Proxies and the request handlers. Runs in one Trio run; not thread-safe."""

    def __init__(self, rng: random.Random, nursery: trio.Nursery) -> None:
        self.rng = rng
        self.nursery = nursery  # where proxy listeners and their connections live
        self.proxies: dict[str, Proxy] = {}
        self.lock = trio.Lock()

    def _proxy(self, name: str) -> Proxy:
        proxy = self.proxies.get(name)
        if proxy is None:
            raise _err(*ERR_PROXY_NOT_FOUND)
        return proxy

    async def _start(self, proxy: Proxy) -> None:
        """Listen (proxy.go ``listen``: ``net.Listen("tcp", proxy.Listen)``); an address
        that is malformed, unresolvable or in use is an error Toxiproxy does not classify:
        500."""
        try:
            await proxy.start(self.nursery)
        except AddressError as error:
            raise _err(f"listen tcp: {error}", 500) from None
        except OSError as error:
            raise _err(f"listen tcp {proxy.listen}: {error.strerror or error}", 500) from None

    # -- handlers: each returns (status, JSON value or None for no body)

    async def version(self, body: bytes) -> tuple[int, Any]:
        return 200, {"version": VERSION}

    async def proxy_index(self, body: bytes) -> tuple[int, Any]:
        return 200, {name: self.proxies[name].to_json() for name in sorted(self.proxies)}

    async def proxy_create(self, body: bytes) -> tuple[int, Any]:
        obj = _decode_body(body, "toxiproxy.Proxy", dict) or {}
        fields = _proxy_fields(obj, {"enabled": True})
        if not fields["name"]:
            raise _err("missing required field: name", 400)
        if not fields["upstream"]:
            raise _err("missing required field: upstream", 400)
        fields["listen"] = fields["listen"] or DEFAULT_LISTEN
        _check_addresses(fields)
        async with self.lock:
            if fields["name"] in self.proxies:
                raise _err(*ERR_PROXY_EXISTS)
            proxy = Proxy(fields["name"], fields["listen"], fields["upstream"], self.rng)
            if fields["enabled"]:
                await self._start(proxy)
            self.proxies[proxy.name] = proxy
        return 201, proxy.to_json()

    async def populate(self, body: bytes) -> tuple[int, Any]:
        try:
            created = await self._populate(body)
        except ApiError as error:
            return error.status, {"error": error.message, "status": error.status, "proxies": None}
        # Go marshals an empty result slice as null; so do we.
        return 201, {"proxies": [proxy.to_json() for proxy in created] or None}

    async def _populate(self, body: bytes) -> list[Proxy]:
        items = _decode_body(body, "[]struct { toxiproxy.Proxy; Enabled *bool }", list) or []
        wanted: list[dict[str, Any]] = []
        names: set[str] = set()
        for number, obj in enumerate(items, start=1):  # phase 1: validate everything
            if not isinstance(obj, dict):
                raise _err("bad request body: json: cannot unmarshal non-object into Go value of type toxiproxy.Proxy", 400)
            fields = _proxy_fields(obj, {"enabled": True})
            if not fields["name"]:
                raise _err(f"missing required field: name at proxy {number}", 400)
            if not fields["upstream"]:
                raise _err(f"missing required field: upstream at proxy {number}", 400)
            if fields["name"] in names:
                raise _err(f'duplicate proxy name "{fields["name"]}"', 500)
            names.add(fields["name"])
            fields["listen"] = fields["listen"] or DEFAULT_LISTEN
            _check_addresses(fields, f" at proxy {number}")
            wanted.append(fields)
        result: list[Proxy] = []
        async with self.lock:  # phase 2: add or replace
            for fields in wanted:
                existing = self.proxies.get(fields["name"])
                if existing is not None and existing.listen == fields["listen"] and existing.upstream == fields["upstream"]:
                    result.append(existing)
                    continue
                if existing is not None:
                    await existing.stop()
                    del self.proxies[existing.name]
                proxy = Proxy(fields["name"], fields["listen"], fields["upstream"], self.rng)
                if fields["enabled"]:
                    await self._start(proxy)
                self.proxies[proxy.name] = proxy
                result.append(proxy)
        return result

    async def proxy_show(self, body: bytes, name: str) -> tuple[int, Any]:
        return 200, self._proxy(name).to_json()

    async def proxy_update(self, body: bytes, name: str) -> tuple[int, Any]:
        async with self.lock:
            proxy = self._proxy(name)
            obj = _decode_body(body, "toxiproxy.Proxy", dict) or {}
            fields = _proxy_fields(obj, {"listen": proxy.listen, "upstream": proxy.upstream, "enabled": proxy.enabled})
            if fields["listen"] != proxy.listen or fields["upstream"] != proxy.upstream:
                try:  # proxy.go Differs: net.ResolveTCPAddr(listen) first; its error (500) changes nothing
                    parse_address(fields["listen"], default_host="127.0.0.1")
                except AddressError as error:
                    raise _err(str(error), 500) from None
                await proxy.stop()  # proxy.go Update: a new address restarts the proxy
                proxy.listen, proxy.upstream = fields["listen"], fields["upstream"]
            if fields["enabled"] != proxy.enabled:
                if fields["enabled"]:
                    await self._start(proxy)
                else:
                    await proxy.stop()
            return 200, proxy.to_json()

    async def proxy_delete(self, body: bytes, name: str) -> tuple[int, Any]:
        async with self.lock:
            proxy = self._proxy(name)
            await proxy.stop()
            del self.proxies[name]
        return 204, None

    async def reset(self, body: bytes) -> tuple[int, Any]:
        async with self.lock:
            for proxy in list(self.proxies.values()):
                await self._start(proxy)
                proxy.toxics.reset()
        return 204, None

    async def toxic_index(self, body: bytes, name: str) -> tuple[int, Any]:
        return 200, self._proxy(name).toxics.to_json()

    async def toxic_create(self, body: bytes, name: str) -> tuple[int, Any]:
        async with self.lock:
            proxy = self._proxy(name)
            spec = self._parse_toxic(body)
            if proxy.toxics.find(spec.name) is not None:
                raise _err(*ERR_TOXIC_EXISTS)
            proxy.toxics.add(spec)
        return 200, spec.to_json()

    def _parse_toxic(self, body: bytes) -> ToxicSpec:
        # toxic_collection.go AddToxicJson: stream, then name, then type, then attributes.
        obj = _decode_body(body, "toxics.ToxicWrapper", dict) or {}
        stream = _field(obj, "stream", str, "ToxicWrapper", "downstream")
        toxic_type = _field(obj, "type", str, "ToxicWrapper", "")
        toxic_name = _field(obj, "name", str, "ToxicWrapper", "")
        found, toxicity = lookup_field(obj, "toxicity")
        toxicity = 1.0 if not found or toxicity is None else _toxicity(toxicity)
        try:
            direction = parse_direction(stream)
        except ToxicError as error:
            raise _err(error.message, error.status) from None
        toxic_name = toxic_name or f"{toxic_type}_{stream}"
        if toxic_type not in ATTRIBUTE_DEFAULTS:
            raise _err(*ERR_INVALID_TOXIC_TYPE)
        if toxic_type == BLOCK_FROM and direction != UPSTREAM:
            raise _err(f"bad request body: {BLOCK_FROM} reads requests, so its stream must be upstream", 400)
        try:
            attributes = merge_attributes(toxic_type, ATTRIBUTE_DEFAULTS[toxic_type], lookup_field(obj, "attributes")[1])
        except ToxicError as error:
            raise _err(error.message, error.status) from None
        return ToxicSpec(toxic_name, toxic_type, stream, direction, toxicity, attributes)

    async def toxic_show(self, body: bytes, name: str, toxic: str) -> tuple[int, Any]:
        spec = self._proxy(name).toxics.find(toxic)
        if spec is None:
            raise _err(*ERR_TOXIC_NOT_FOUND)
        return 200, spec.to_json()

    async def toxic_update(self, body: bytes, name: str, toxic: str) -> tuple[int, Any]:
        async with self.lock:
            proxy = self._proxy(name)
            old = proxy.toxics.find(toxic)
            if old is None:
                raise _err(*ERR_TOXIC_NOT_FOUND)
            obj = _decode_body(body, "struct { Attributes interface {}; Toxicity float32 }", dict) or {}
            found, toxicity = lookup_field(obj, "toxicity")
            toxicity = old.toxicity if not found or toxicity is None else _toxicity(toxicity, "")
            try:
                attributes = merge_attributes(old.type, old.attributes, lookup_field(obj, "attributes")[1])
            except ToxicError as error:
                raise _err(error.message, error.status) from None
            new = ToxicSpec(old.name, old.type, old.stream, old.direction, toxicity, attributes)
            proxy.toxics.replace(old, new)
        return 200, new.to_json()

    async def toxic_delete(self, body: bytes, name: str, toxic: str) -> tuple[int, Any]:
        async with self.lock:
            proxy = self._proxy(name)
            spec = proxy.toxics.find(toxic)
            if spec is None:
                raise _err(*ERR_TOXIC_NOT_FOUND)
            proxy.toxics.remove(spec)
        return 204, None

    # -- routing (gorilla/mux routes of api.go)

    def route(self, method: str, path: str) -> tuple[Any, tuple[str, ...]]:
        parts = tuple(unquote(part) for part in path.split("/")[1:]) if path.startswith("/") else ()
        routes: dict[tuple[str, ...], dict[str, Any]] = {
            ("version",): {"GET": self.version},
            ("reset",): {"POST": self.reset},
            ("populate",): {"POST": self.populate},
            ("proxies",): {"GET": self.proxy_index, "POST": self.proxy_create},
        }
        if parts in routes:
            table, args = routes[parts], ()
        elif len(parts) == 2 and parts[0] == "proxies" and parts[1]:
            table = {"GET": self.proxy_show, "POST": self.proxy_update, "PATCH": self.proxy_update, "DELETE": self.proxy_delete}
            args = (parts[1],)
        elif len(parts) == 3 and parts[0] == "proxies" and parts[1] and parts[2] == "toxics":
            table, args = {"GET": self.toxic_index, "POST": self.toxic_create}, (parts[1],)
        elif len(parts) == 4 and parts[0] == "proxies" and parts[1] and parts[2] == "toxics" and parts[3]:
            table = {"GET": self.toxic_show, "POST": self.toxic_update, "PATCH": self.toxic_update, "DELETE": self.toxic_delete}
            args = (parts[1], parts[3])
        else:
            raise _err("page not found", 404)
        handler = table.get(method)
        if handler is None:
            raise _err("method not allowed", 405)
        return handler, args

    async def dispatch(self, method: str, target: str, user_agent: str, body: bytes) -> tuple[int, str, bytes]:
        """One request to (status, content type, body bytes)."""
        if user_agent.startswith("Mozilla/"):  # api.go stopBrowsersMiddleware (CSRF guard)
            return 403, "text/plain; charset=utf-8", b"User agent not allowed\n"
        try:
            handler, args = self.route(method, urlsplit(target).path)
            status, value = await handler(body, *args)
        except ApiError as error:
            status, value = error.status, {"error": error.message, "status": error.status}
        except Exception as error:  # Toxiproxy answers 500 for what it did not classify
            LOGGER.exception("%s %s failed", method, target)
            status, value = 500, {"error": str(error), "status": 500}
        if value is None:
            return status, "", b""
        payload = json.dumps(value).encode() + b"\n"
        return status, "application/json", payload

    # -- HTTP/1.1 connection handling

    async def serve_connection(self, stream: trio.SocketStream) -> None:
        """One API connection (module docstring, "Connections"). Never raises but
        Cancelled: whatever goes wrong costs this connection only."""
        try:
            await self._serve_requests(stream)
        except trio.Cancelled:
            raise
        except Exception:  # noqa: BLE001 - a bug must cost one connection, not the server
            LOGGER.exception("API connection failed")
        finally:
            close_stream_now(stream, reset=False)

    async def _serve_requests(self, stream: trio.SocketStream) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        first = True
        try:
            while True:
                request = await self._read_request(stream, connection, first)
                first = False
                if request is None:
                    return
                head, body = request
                user_agent = ""
                for header_name, value in head.headers:
                    if header_name == b"user-agent":
                        user_agent = value.decode("latin-1")
                method, target = head.method.decode("ascii", "replace"), head.target.decode("latin-1")
                with trio.move_on_after(HANDLER_TIMEOUT_S) as handler_scope:
                    status, content_type, payload = await self.dispatch(method, target, user_agent, body)
                if handler_scope.cancelled_caught:  # http.TimeoutHandler: 503 with its (empty) message
                    status, content_type, payload = 503, "text/html; charset=utf-8", b""
                with trio.move_on_after(WRITE_TIMEOUT_S) as write_scope:
                    await _respond(stream, connection, status, content_type, payload)
                if write_scope.cancelled_caught:
                    return  # a client that does not read its answer: drop it
                if connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
                    return
                connection.start_next_cycle()
        except h11.RemoteProtocolError as error:
            if connection.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                payload = json.dumps({"error": f"bad request: {error}", "status": 400}).encode() + b"\n"
                with trio.move_on_after(WRITE_TIMEOUT_S):
                    try:
                        await _respond(stream, connection, 400, "application/json", payload, close=True)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError):
                        pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    async def _read_request(self, stream: trio.SocketStream, connection: h11.Connection, first: bool) -> tuple[h11.Request, bytes] | None:
        """The next request and its body, or None when the connection should close (the
        client left, sent something else, or ran out of time). A keep-alive connection waits
        up to IDLE_TIMEOUT_S for the request's first byte; from then on (and from the
        accept, for the first request) the whole request must arrive within
        REQUEST_READ_TIMEOUT_S. A body over MAX_REQUEST_BODY_BYTES is answered 413."""
        if not first:
            with trio.move_on_after(IDLE_TIMEOUT_S) as idle:
                started = await _wait_for_data(stream, connection)
            if idle.cancelled_caught or not started:
                return None
        body = bytearray()
        request: Any = None
        with trio.move_on_after(REQUEST_READ_TIMEOUT_S) as read_scope:
            request = await _next_event(stream, connection)
            if not isinstance(request, h11.Request):
                return None
            while True:
                if connection.client_is_waiting_for_100_continue:
                    await stream.send_all(connection.send(h11.InformationalResponse(status_code=100, headers=[])))
                event = await _next_event(stream, connection)
                if isinstance(event, h11.Data):
                    body += event.data
                    if len(body) > MAX_REQUEST_BODY_BYTES:
                        with trio.move_on_after(WRITE_TIMEOUT_S):
                            await _respond(stream, connection, 413, "text/plain", b"request body too large\n", close=True)
                        return None
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    return None
        if read_scope.cancelled_caught or not isinstance(request, h11.Request):
            return None
        return request, bytes(body)


async def _wait_for_data(stream: trio.SocketStream, connection: h11.Connection) -> bool:
    """Wait until the next request has begun: bytes already buffered by h11 (a pipelined
    request), or the first bytes from the socket, fed to h11. False when the client
    closed instead."""
    buffered, closed = connection.trailing_data
    if buffered:
        return True
    if closed:
        return False
    try:
        data = await stream.receive_some(64 * 1024)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        data = b""
    connection.receive_data(data)
    return bool(data)


async def _next_event(stream: trio.SocketStream, connection: h11.Connection) -> Any:
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        try:
            data = await stream.receive_some(64 * 1024)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        connection.receive_data(data)


def _reason(status: int) -> bytes:
    """The reason phrase Go's net/http writes (``StatusText``): "200 OK", "404 Not Found"."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


async def _respond(
    stream: trio.SocketStream, connection: h11.Connection, status: int, content_type: str, payload: bytes, *, close: bool = False
) -> None:
    headers = []
    if content_type:
        headers.append(("Content-Type", content_type))
    if status not in (204, 304):
        headers.append(("Content-Length", str(len(payload))))
    if close:
        headers.append(("Connection", "close"))
    data = connection.send(h11.Response(status_code=status, headers=headers, reason=_reason(status)))
    if payload:
        data += connection.send(h11.Data(data=payload))
    data += connection.send(h11.EndOfMessage())
    await stream.send_all(data)


# ---------------------------------------------------------------- entry points


async def serve(
    host: str = "127.0.0.1",
    port: int = 8474,
    *,
    rng: random.Random,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the Toxiproxy API on host:port until cancelled.

    ``task_status.started((host, port))`` gives the bound address (port 0 picks one).
    Every random choice (toxicity, jitter, slicer cuts) comes from ``rng``. On
    cancellation every proxy listener, proxied connection and API connection is closed
    before this returns.
    """
    assert isinstance(rng, random.Random), "pass a seeded random.Random"
    listener = await bind_listener(host, port)
    address = listener_address(listener)
    try:
        async with trio.open_nursery() as nursery:
            api = ToxiproxyApi(rng, nursery)
            await nursery.start(functools.partial(trio.serve_listeners, api.serve_connection, [listener], handler_nursery=nursery))
            task_status.started(address)
    finally:
        listener.socket.close()


def raise_open_file_limit() -> tuple[int, int] | None:
    """Raise the soft RLIMIT_NOFILE to the hard limit, as every Go program does at start
    since Go 1.19 (https://go.dev/doc/go1.19#os) -- Toxiproxy included. Every connection,
    idle or not, holds a descriptor: at the common default soft limit of 1,024, a thousand
    idle clients made accept fail (EMFILE) and every new client wait until an idle one
    reached its ReadTimeout (issue 32; tests/faults/test_toxiproxy_liveness.py). Returns
    (old soft, new soft), or None where there is no such limit or it cannot be raised."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        return None
    return soft, hard


def run_forever(listen: str = "127.0.0.1:8474", seed: int = 0) -> None:
    """Serve the API on ``listen`` until SIGINT or SIGTERM; then close everything.

    For ``chaoskube toxiproxy --listen ...``; must run in the main thread (signals).
    Prints the seed and the bound address first, so a run can be replayed. Raises the
    process's open-file limit first (:func:`raise_open_file_limit`), as Toxiproxy runs.
    """
    try:
        host, port = parse_address(listen, default_host="127.0.0.1")
    except AddressError as error:
        raise ListenError(str(error)) from None
    raise_open_file_limit()
    print(f"chaoskube toxiproxy: seed={seed} listen={format_address(host, port)}", flush=True)

    async def main() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                bound = await nursery.start(functools.partial(serve, host, port, rng=random.Random(seed)))
                print(f"chaoskube toxiproxy: serving the Toxiproxy {VERSION} API on http://{format_address(*bound)}", flush=True)
                async for signum in signals:
                    print(f"chaoskube toxiproxy: {signal.Signals(signum).name}, closing every listener", flush=True)
                    nursery.cancel_scope.cancel()
                    break

    try:
        trio.run(main)
    except BaseException as error:  # noqa: BLE001 - Trio wraps the bind error in exception groups
        problem = _listen_problem(error)
        if problem is None:
            raise
        raise ListenError(problem) from None


def _listen_problem(error: BaseException) -> str | None:
    """One line for a bind that failed (in use, not resolvable, not permitted), found in
    ``error`` or its exception groups; None for anything else."""
    if isinstance(error, BaseExceptionGroup):
        found = [_listen_problem(member) for member in error.exceptions]
        return next((item for item in found if item), None)
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host ({error.strerror or error})"
    if isinstance(error, OSError):
        return f"cannot listen there ({error.strerror or error})"
    return None


class ToxiproxyServer:
    """The API server in a background thread (its own ``trio.run``, real clock).

    ``start()`` returns the bound (host, port) once the API accepts connections;
    ``stop()`` cancels the run and joins the thread, and by then every listener and
    socket the server opened is closed. Usable as a context manager.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, rng: random.Random) -> None:
        assert isinstance(rng, random.Random), "pass a seeded random.Random"
        self._host = host
        self._port = port
        self._rng = rng
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._address: tuple[str, int] | None = None
        self._error: BaseException | None = None

    @property
    def api_address(self) -> tuple[str, int]:
        if self._address is None:
            raise RuntimeError("the server is not running")
        return self._address

    def start(self, timeout_s: float = 10.0) -> tuple[str, int]:
        if self._thread is not None:
            raise RuntimeError("start() called twice")
        self._thread = threading.Thread(target=self._thread_main, name="chaoskube-toxiproxy", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise TimeoutError(f"toxiproxy server did not start within {timeout_s} s")
        if self._error is not None:
            self._thread.join(timeout_s)
            raise RuntimeError("toxiproxy server failed to start") from self._error
        return self.api_address

    def stop(self, timeout_s: float = 10.0) -> None:
        thread = self._thread
        if thread is None:
            return
        if self._token is not None and self._scope is not None and thread.is_alive():
            try:
                trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        thread.join(timeout_s)
        if thread.is_alive():
            raise TimeoutError(f"toxiproxy server thread still running after {timeout_s} s")
        self._address = None
        if self._error is not None:
            raise RuntimeError("toxiproxy server crashed") from self._error

    def __enter__(self) -> ToxiproxyServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _thread_main(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as error:  # reported by start()/stop() in the caller's thread
            self._error = error
        finally:
            self._started.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            self._address = await nursery.start(functools.partial(serve, self._host, self._port, rng=self._rng))
            self._started.set()

"""The HTTPS front: real loopback listeners, one per API server replica, that real clients
(kubectl, client-go, the Python client, kopf) talk to, each request carried into the
simulated network as the simulated server's own protocol.

Shape (see docs/api-server.md, "The HTTP front"):

- One TLS listener per replica (``kube-apiserver-1`` on the first port, ``-2`` on the
  next, ...), HTTP/1.1 (h11; ALPN offers only ``http/1.1``, so Go's client does not try
  HTTP/2). The listener follows its replica's process: open while it lives, closed when it
  is killed (connections are refused, and every open connection of it is closed at once, as
  a kernel resets the sockets of a dead process), open again when it restarts.
- Every request crosses the simulated network from a *client process*: the identity the
  connection presents decides which (``identities``: the credential's user or token ->
  process name; ``operator`` for the program ``chaoskube serve --run`` starts, ``outside``
  for everyone else). So every fault acts on real clients as on simulated ones: a
  partition between the client process and the replica does not lose the request, as TCP
  does not: it is retransmitted at TCP's backoff (0.2 s doubling, capped at 120 s,
  journaled ``retransmit``) and answered, late, once the partition heals; after
  ``stall_bound_s`` (Linux gives up after ``tcp_retries2`` = 15 tries, ~924 s) the
  connection is closed (``timed-out``). An answer a partition cuts on its way back is
  retransmitted by the network alike (the call is ``tcp=True``), within the front's
  ``call_timeout_s``; a request that still gets no answer (the answer cut for longer, a
  message lost to link loss) *stalls* the connection (held without an answer, as an
  unreachable peer does) until the client gives up or the bound. A paused replica holds
  a request until it resumes; link delays make it answer late; a killed client process
  gets its connections closed. A watch stream rides its connection alike
  (:meth:`chaoskube.sim.network.Network.open_tcp_stream`): events a partition cuts are
  held, retransmitted at the same backoff and delivered in order after the heal; past
  ``stall_bound_s`` the connection is reset (``tcp-reset``, ``watch-reset``: the body
  ends without its last chunk, so the client sees the stream break).
- Requests: resource paths become :class:`chaoskube.api.protocol.Request` (``routes.py``,
  ``codec.py``); discovery, ``/version`` and the OpenAPI documents are computed here from
  the kinds registry but only after a :class:`~chaoskube.api.protocol.NonResourceRequest`
  round trip through the network (authenticated by the replica), so they too fail, stall
  and wait as the replica does. ``limit``/``continue`` pagination is served here over
  consistent reads at one revision (upstream's continue token: the revision and the next
  key; 410 once that revision is compacted). The ``scale`` subresource is a view of the
  Deployment / ReplicaSet, written with a resourceVersion precondition.
- Watches (``?watch=1``): a chunked stream of JSON ``WatchEvent`` lines (or protobuf frames), bookmarks when
  asked, the stream closed when the server closes it, when a message is lost (sequence
  gap: link loss, not a partition), reset when TCP gives up across a partition, or when the client goes away (the server is told to stop it). A watch the server
  refuses with 410 Expired is answered 200 with one ERROR event carrying the Status, as
  kube-apiserver's ``errWatcher`` does.
- Journal: every request is an ``http-request`` event (client process, replica, method,
  path, verb, resource, user, code, virtual duration); every mutating request is also an
  ``api-op`` invoke -> ok / fail / info and every get or list an ``api-read``, in the
  simulated client's shape (:mod:`chaoskube.api.oplog`: preconditions, a delete's grace
  and propagation, answered versions and uids), so the checkers (``api-linearizability``,
  ``graceful-termination``, ``garbage-collection``) judge what real clients did as they
  judge the simulated ones. A watch is journaled as the informers' are (``watch-open``
  with ``outside``, then ``watch-recv`` per message sent), so ``api-watch`` judges real
  clients' watches; each page of a paginated list is a ``list-page`` event (the token's
  revision and start, the answered revision, items and next token) for
  ``api-pagination``; every merge, JSON or strategic merge patch answered is an
  ``api-patch`` event (the patch applied, the version answered) for ``api-patch``.

Perturbations for ``chaoskube test-operator`` (off unless set): ``lose_response`` drops the
answer to a committed write; ``withhold(client)`` keeps every event of a client's watch
streams from it (journaled ``watch-withheld``) until ``end_withholding(client)`` ends its
streams and answers its next watch from before the newest withheld revision with 410
Expired, so it lists again (an *unobserved state*).

Protobuf (``application/vnd.kubernetes.protobuf``, :mod:`kubeproto`) is served for bodies,
answers and watch streams of every built-in kind, as negotiated in :mod:`codec`.

``pods/log`` answers what the simulated container did (:mod:`logs`); ``exec``, ``attach``,
``portforward`` and ``proxy`` of a pod are refused with a 400 Status that says why (the
containers are simulated), after the pod is read (404 / 403 as a ``get``).

Server-side apply: ``PATCH`` with ``application/apply-patch+yaml`` and ``fieldManager``
(required), ``force``, ``dryRun``, ``fieldValidation``; every create, update and patch
names its field manager (``fieldManager``, else the user agent's first word), for
``managedFields`` (:mod:`chaoskube.api.managedfields`).

Not served: HTTP/2.
"""

from __future__ import annotations

import base64
import contextvars
import http
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import h11
import msgspec
import orjson
import trio

from chaoskube.api.managedfields import manager_or_user_agent, validate_field_manager
from chaoskube.api.objects import REVIEWS, CustomObject, KindInfo, ObjectMeta, Scale, ScaleSpec
from chaoskube.api.oplog import end_fields, op_fields, preconditions, read_fields
from chaoskube.api.protocol import (
    API_PORT,
    WATCH_PORT,
    Credentials,
    NonResourceRequest,
    Request,
    Response,
    Status,
    StatusError,
    WatchEvent,
    WatchMessage,
    WatchStop,
    bad_request,
    conflict,
    gone,
    not_found,
)
from chaoskube.apiserver.http import codec, discovery, kubeproto, logs, openapi, tables, views
from chaoskube.apiserver.http.routes import CustomKind, RequestInfo, custom_kinds, group_version, parse_path, subresources_of
from chaoskube.sim import Failed, Ok, Process, World
from chaoskube.sim.network import tcp_backoff

__all__ = ["ApiFront", "FrontConfig", "ServerTLS"]

#: ``kubectl version`` reads this; the dispatcher kubectl picks its version from it.
SERVER_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0-chaoskube", "gitCommit": "chaoskube", "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64",
}
MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's request body limit
WATCH_BUFFER_MESSAGES = 10_000
_ROUTER_KEY = "chaoskube.apiserver.http/watch-router"
#: The ``Accept`` header of the request a task serves (a failure's Status is encoded as
#: the client accepts it, as ``responsewriters.ErrorNegotiated`` does).
_ACCEPT: contextvars.ContextVar[str] = contextvars.ContextVar("chaoskube-front-accept", default="")
#: 406 NotAcceptable's list (``NewNotAcceptableError`` of the served types).
_ACCEPTED = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
_MUTATING = ("create", "update", "patch", "delete")
_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}


def _write_options(verb: str, subresource: str, content_type: str, query: dict[str, str], headers: dict[str, str]) -> tuple[str, bool]:
    """The field manager and ``force`` of a write (``CreateOptions`` / ``UpdateOptions`` /
    ``PatchOptions``): ``fieldManager`` or the user agent's first word
    (``managerOrUserAgent``); an apply must name its manager and only an apply may force
    (``ValidatePatchOptions``, apimachinery ``meta/v1/validation``)."""
    if verb not in ("create", "update", "patch") or subresource in ("eviction", "binding"):
        return "", False
    options = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}[verb]
    apply = verb == "patch" and content_type.split(";")[0].strip().lower() == "application/apply-patch+yaml"
    manager = query.get("fieldManager", "")
    force_text = query.get("force", "")
    causes = []
    problem = validate_field_manager(manager)
    if problem:
        causes.append(problem)
    if apply and not manager:
        causes.append("fieldManager: Required value: is required for apply patch")
    if force_text and not apply:
        causes.append("force: Forbidden: may not be specified for non-apply patch")
    if force_text not in ("", "true", "false", "1", "0", "True", "False"):
        raise StatusError(bad_request(f"force: invalid boolean {force_text!r}"))
    if causes:
        raise StatusError(Status(422, "Invalid", f'{options}.meta.k8s.io "" is invalid: {", ".join(causes)}', causes=tuple(causes)))
    return manager_or_user_agent(manager, headers.get("user-agent", "")), force_text in ("true", "1", "True")


@dataclass(frozen=True)
class ServerTLS:
    """The serving certificate and key (PEM) and the CA that signs client certificates."""

    certificate: bytes
    key: bytes
    client_ca: bytes

    def context(self) -> ssl.SSLContext:
        import tempfile

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.NamedTemporaryFile() as cert, tempfile.NamedTemporaryFile() as key:
            cert.write(self.certificate)
            cert.flush()
            key.write(self.key)
            key.flush()
            context.load_cert_chain(cert.name, key.name)
        context.load_verify_locations(cadata=self.client_ca.decode())
        context.verify_mode = ssl.CERT_OPTIONAL  # a bearer token is fine too
        context.set_alpn_protocols(["http/1.1"])
        return context


@dataclass(frozen=True)
class FrontConfig:
    host: str = "127.0.0.1"
    port: int = 6443  # the first replica's; the next ones take the next ports (0: any free port)
    #: (kind, value) -> client process name, kind "user" (a certificate's CN) or "token".
    identities: tuple[tuple[str, str, str], ...] = ()
    default_client: str = "outside"
    #: How long a request may go unanswered in the simulated network before the front
    #: treats it as lost and stalls the connection (the server's --request-timeout is 60 s).
    call_timeout_s: float = 90.0
    #: A stalled connection is closed after this (virtual) time: Linux gives up on an
    #: unacknowledged TCP connection after about 15 minutes (tcp_retries2 = 15).
    stall_bound_s: float = 924.0


@dataclass
class _Watch:
    watch_id: str
    send: Any
    receive: Any
    next_sequence: int = 1
    client: str = ""
    #: TCP gave up on the stream across a partition: the connection is reset, not ended.
    reset: bool = False


@dataclass
class _Client:
    """Per client process: its watch router and its api-op numbering."""

    ops: int = 0
    requests: int = 0


@dataclass
class _Replica:
    name: str
    port: int
    scope: trio.CancelScope | None = None
    listening: bool = False
    connections: set[Any] = field(default_factory=set)


#: Pod subresources that connect to a container or a port (``pkg/registry/core/pod/rest``),
#: and ``log``.
_CONNECT_SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward", "proxy"})
_CONNECT_WORDS = {"exec": "execute a command in", "attach": "attach to", "portforward": "forward a port to", "proxy": "proxy to"}


class _Stall(Exception):
    """The request got no answer from the simulated network: hold the connection."""


class _Drop(Exception):
    """Close the connection without an answer (the replica died under it; or, outcome
    ``timed-out``, TCP gave up retransmitting the request across a partition)."""

    def __init__(self, outcome: str = "dropped", reason: str = "connection refused") -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason


class ApiFront:
    """See the module docstring. Create inside ``world.run``; ``await front.start(nursery)``
    binds every listener and returns; cancelling ``nursery`` closes them all."""

    def __init__(self, world: World, api_servers: list[str], tls: ServerTLS | None, config: FrontConfig | None = None, *, client_roles: dict[str, str] | None = None) -> None:
        self.world = world
        self.api_servers = list(api_servers)
        self.config = config or FrontConfig()
        self._ssl = tls.context() if tls is not None else None  # None: in-process streams only (serve_stream)
        self._replicas = {name: _Replica(name, 0) for name in self.api_servers}
        self._nursery: trio.Nursery | None = None
        self._clients: dict[str, _Client] = {}
        self._client_roles = dict(client_roles or {})
        self._identities = {(kind, value): process for kind, value, process in self.config.identities}
        self._statistics = {"requests": 0, "stalled": 0, "dropped": 0, "watches": 0}
        #: A lost response (``chaoskube test-operator``): called with (client process,
        #: request, response) after the server answered a mutating request; True drops the
        #: answer (the write stands, the connection closes unanswered, as when the server
        #: or a proxy dies between the commit and the reply). Journaled as an ``info`` op.
        self.lose_response: Callable[[str, Request, Response], bool] | None = None
        #: Unobserved states (``chaoskube test-operator``, :meth:`withhold`): per client
        #: process whose watch events are withheld, the newest revision withheld so far;
        #: per client, the revision below which its next watch is answered 410 Expired.
        self._withheld: dict[str, int] = {}
        self._expired: dict[str, int] = {}
        #: What the simulated containers "printed" (``kubectl logs``), from the journal.
        self.logs = logs.ContainerLogs()
        self.logs.follow(world)
        #: Per replica: the custom kinds its last discovery answer served (its established CRDs).
        self._custom: dict[str, list[CustomKind]] = {}

    # ------------------------------------------------------------------ lifecycle
    @property
    def urls(self) -> list[tuple[str, str]]:
        """(replica, https URL) for every replica, in order."""
        return [(name, f"https://{self.config.host}:{replica.port}") for name, replica in self._replicas.items()]

    def statistics(self) -> dict[str, int]:
        return dict(self._statistics)

    async def start(self, nursery: trio.Nursery) -> None:
        """Spawn the default client process, bind every listener, follow the replicas."""
        self._nursery = nursery
        self.ensure_client(self.config.default_client, role=self._client_roles.get(self.config.default_client, "outside"))
        port = self.config.port
        for name in self.api_servers:
            replica = self._replicas[name]
            listener = await self._bind(port)
            replica.port = listener.socket.getsockname()[1]
            port = 0 if self.config.port == 0 else replica.port + 1
            process = self.world.process(name)
            if process.alive:
                self._serve(replica, listener)
            else:
                await listener.aclose()
            process.observe(self._on_replica)

    async def _bind(self, port: int) -> trio.SocketListener:
        listeners = await trio.open_tcp_listeners(port, host=self.config.host)
        assert len(listeners) == 1
        return listeners[0]

    def _on_replica(self, process: Process, event: str) -> None:
        replica = self._replicas[process.name]
        if event == "kill" or event == "exit":
            self._close(replica)
        elif event in ("start", "restart") and not replica.listening and self._nursery is not None:
            self._nursery.start_soon(self._reopen, replica)

    async def _reopen(self, replica: _Replica) -> None:
        for _ in range(50):  # the old socket may linger for a moment
            try:
                listener = await self._bind(replica.port)
            except OSError:
                await trio.sleep(0.1)
                continue
            if self.world.process(replica.name).alive and not replica.listening:
                self._serve(replica, listener)
            else:
                await listener.aclose()
            return

    def _serve(self, replica: _Replica, listener: trio.SocketListener) -> None:
        assert self._nursery is not None
        scope = trio.CancelScope()
        replica.scope = scope
        replica.listening = True
        self.world.record("http-listener", server=replica.name, event="open", port=replica.port)

        async def run() -> None:
            with scope:
                async with listener:
                    await trio.serve_listeners(lambda stream: self._connection(replica, stream), [listener])

        self._nursery.start_soon(run, name=f"http-front:{replica.name}")

    def _close(self, replica: _Replica) -> None:
        if replica.scope is not None:
            replica.scope.cancel()
            replica.scope = None
        if replica.listening:
            replica.listening = False
            self.world.record("http-listener", server=replica.name, event="close", port=replica.port, connections=len(replica.connections))
        replica.connections.clear()

    # ------------------------------------------------------------------ unobserved states
    def withhold(self, client: str) -> None:
        """From now on, the events of ``client``'s watch streams are not sent (each message
        withheld is journaled as ``watch-withheld``): the client misses the states they
        carry, as Sieve's *unobserved state* plans make a controller miss them (Sun et al.,
        OSDI 2022, §4.3)."""
        self._withheld.setdefault(client, 0)
        self.world.record("watch-withholding", client=client, event="start")

    def end_withholding(self, client: str) -> int:
        """End every watch stream of ``client`` (cleanly, as a server ends one) and answer
        its next watch from before the newest revision withheld with 410 Expired ("too old
        resource version"), as a watch cache whose history has moved past the client's
        resourceVersion does: the client lists again and sees only the latest state, never
        the ones withheld -- what a relist after a broken watch does (client-go
        ``reflector.go``: on 410 it relists). Returns that revision (0: nothing withheld)."""
        newest = self._withheld.pop(client, 0)
        if newest:
            self._expired[client] = newest
        process = self.world.processes.get(client)
        router = process.memory.get(_ROUTER_KEY) if process is not None else None
        closed = 0
        for watch_id in sorted(router or {}):
            watch = router.pop(watch_id)
            watch.send.close()
            closed += 1
        self.world.record("watch-withholding", client=client, event="end", revision=newest, closed=closed)
        return newest

    def _withheld_now(self, watch: _Watch, message: WatchMessage) -> bool:
        if watch.client not in self._withheld:
            return False
        versions = [int(summary[2]) for summary in map(_watch_summary, message.events) if str(summary[2]).isdigit()]
        self._withheld[watch.client] = max([self._withheld[watch.client], *versions])
        self.world.record("watch-withheld", client=watch.client, watch=watch.watch_id, events=[_watch_summary(event) for event in message.events])
        return True

    def _expired_for(self, client: str, request: Request) -> Response | None:
        """410 Expired for a watch from before what ``end_withholding`` withheld."""
        expired = self._expired.get(client)
        if expired is None or not request.resource_version.isdigit() or request.resource_version == "0":
            return None
        asked = int(request.resource_version)
        if asked >= expired:
            del self._expired[client]  # it has listed again (or caught up): served as usual
            return None
        return Response(410, status=gone(f"too old resource version: {asked} ({expired})"))

    # ------------------------------------------------------------------ client processes
    def ensure_client(self, name: str, role: str = "outside") -> Process:
        """The client process ``name``, spawned (idle) if it does not exist yet."""
        if name not in self.world.processes:
            async def idle(process: Process) -> None:
                await trio.sleep_forever()

            self.world.spawn(name, idle, role=role)
        self._clients.setdefault(name, _Client())
        return self.world.process(name)

    def _client_for(self, credentials: Credentials) -> str:
        if credentials.common_name and ("user", credentials.common_name) in self._identities:
            return self._identities[("user", credentials.common_name)]
        if credentials.token and ("token", credentials.token) in self._identities:
            return self._identities[("token", credentials.token)]
        return self.config.default_client

    def _router(self, process: Process) -> dict[str, _Watch]:
        router = process.memory.get(_ROUTER_KEY)
        if router is None:
            router = process.memory[_ROUTER_KEY] = {}

            def deliver(message: Any) -> None:
                body = message.body
                if isinstance(body, WatchMessage):
                    watch = router.get(body.watch_id)
                    if watch is not None:
                        try:
                            watch.send.send_nowait(body)
                        except trio.WouldBlock:
                            router.pop(body.watch_id, None)
                            watch.send.close()

            process.on_message(WATCH_PORT, deliver)
        return router

    # ------------------------------------------------------------------ connections
    async def _connection(self, replica: _Replica, raw: trio.SocketStream) -> None:
        stream = trio.SSLStream(raw, self._ssl, server_side=True)
        try:
            with trio.move_on_after(30):
                await stream.do_handshake()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError, OSError):
            return
        if not stream._ssl_object or not self.world.process(replica.name).alive:  # noqa: SLF001
            return
        await self._converse(replica, stream, _certificate_credentials(stream))

    async def serve_stream(self, server: str, stream: Any, credentials: Credentials | None = None) -> None:
        """Serve HTTP/1.1 on ``stream`` as replica ``server``'s listener would, without TLS:
        an in-process outside client (:mod:`chaoskube.apiserver.http.outside`) on a
        memory stream, in virtual time. ``credentials``: the client certificate's, if any
        (a bearer token in the requests works as over TLS)."""
        await self._converse(self._replicas[server], stream, credentials or Credentials())

    async def _converse(self, replica: _Replica, stream: Any, credentials: Credentials) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        replica.connections.add(stream)
        try:
            while True:
                request = await _next_event(stream, connection)
                if not isinstance(request, h11.Request):
                    return
                body = b""
                while True:
                    event = await _next_event(stream, connection)
                    if isinstance(event, h11.Data):
                        body += event.data
                        if len(body) > MAX_BODY_BYTES:
                            await _send(stream, connection, 413, codec.dumps(codec.encode_status(Status(413, "RequestEntityTooLarge", "the request body is too large"))), close=True)
                            return
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                keep = await self._handle(replica, stream, connection, request, body, credentials)
                if not keep or connection.our_state is not h11.DONE:
                    return
                try:
                    connection.start_next_cycle()
                except h11.LocalProtocolError:
                    return
        except Exception as error:  # noqa: BLE001 - one connection's trouble never stops the front
            # The client went away (broken streams, possibly inside an exception group of
            # a watch), or spoke bad HTTP/TLS: close. Anything else is a bug of the front,
            # journaled, and this connection closed.
            if not _connection_trouble(error):
                self.world.record("http-error", server=replica.name, error=f"{type(error).__name__}: {error}"[:300])
            return
        finally:
            replica.connections.discard(stream)
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                try:
                    await stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError, OSError):
                    pass

    async def _handle(self, replica: _Replica, stream: Any, connection: h11.Connection, request: h11.Request, body: bytes, certificate: Credentials) -> bool:
        """Serve one request; False when the connection must close."""
        self.world.catch_up()
        started = self.world.now
        headers = {name.decode().lower(): value.decode("latin-1") for name, value in request.headers}
        target = request.target.decode("latin-1")
        split = urlsplit(target)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        method = request.method.decode()
        _ACCEPT.set(headers.get("accept", ""))
        credentials = certificate
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            credentials = Credentials(token=authorization[7:].strip())
        impersonated = headers.get("impersonate-user", "")
        if impersonated:  # kubectl --as, --as-group (every Impersonate-Group header)
            groups = tuple(value.decode("latin-1") for name, value in request.headers if name.decode().lower() == "impersonate-group")
            credentials = replace(credentials, impersonate_user=impersonated, impersonate_groups=groups)
        client_name = self._client_for(credentials)
        client = self.world.processes.get(client_name)
        self._statistics["requests"] += 1
        watch = query.get("watch", "").lower() in ("1", "true")
        info = parse_path(method, split.path, watch, self._custom.get(replica.name, ()))
        record = {"client": client_name, "server": replica.name, "method": method, "path": split.path, "user": credentials.common_name or ("token" if credentials.token else "anonymous"), "user_agent": headers.get("user-agent", "")[:80]}
        if info.resource_request:
            record.update(verb=info.verb, resource=info.resource, subresource=info.subresource, namespace=info.namespace, name=info.name)
        if client is None or not client.running:
            # The client process is down (killed or paused by a fault): its connection
            # is gone too.
            self._journal_http(record, 0, started, outcome="client-down")
            return False
        self._clients.setdefault(client_name, _Client()).requests += 1
        try:
            if info.resource_request and info.kind is None and info.group:
                # Maybe a custom resource whose CRD this front has not seen yet: ask the
                # replica which CRDs it serves (a discovery round trip), then look again.
                await self._refresh_custom(replica, client, f"/apis/{info.group}/{info.version}", credentials)
                info = parse_path(method, split.path, watch, self._custom.get(replica.name, ()))
            if info.resource_request and info.verb == "watch":
                await self._watch(replica, client, stream, connection, info, query, headers, credentials, record, started)
                return True
            code, payload, extra = await self._dispatch(replica, client, info, method, query, headers, body, credentials, record)
        except _Stall:
            self._statistics["stalled"] += 1
            self._journal_http(record, 0, started, outcome="stalled")
            await self._stall(stream)
            return False
        except _Drop as error:
            self._statistics["dropped"] += 1
            self._journal_http(record, 0, started, outcome=error.outcome)
            return False
        self._journal_http(record, code, started)
        await _send(stream, connection, code, payload, headers=extra, head=(method == "HEAD"))
        return True

    async def _stall(self, stream: Any) -> None:
        """Hold the connection without an answer until the client closes it (or the bound)."""
        with trio.move_on_after(self.config.stall_bound_s):
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return

    def _journal_http(self, record: dict[str, Any], code: int, started: float, outcome: str = "answered") -> None:
        self.world.record("http-request", **record, code=code, outcome=outcome, duration_s=round(self.world.now - started, 6))

    # ------------------------------------------------------------------ calls
    async def _call(self, client: Process, server: str, body: Any) -> Response:
        """One request through the simulated network, as ``client``, on its TCP
        connection: while a partition cuts the client from the replica the request is
        retransmitted at TCP's backoff (:func:`chaoskube.sim.network.tcp_backoff`,
        journaled ``retransmit``) and sent once the link is whole; a reply cut on its way
        back is retransmitted by the network alike (``tcp=True``). Raises _Stall (no
        answer) or _Drop (refused: the replica is down; or TCP gave up after
        ``stall_bound_s`` of retransmissions: ``timed-out``)."""
        await self._retransmit_while_cut(client, server)
        outcome = await client.call(server, body, port=API_PORT, timeout_s=self.config.call_timeout_s, tcp=True)
        if isinstance(outcome, Ok):
            assert isinstance(outcome.value, Response), outcome.value
            return outcome.value
        if isinstance(outcome, Failed):
            if isinstance(outcome.value, Response):
                return outcome.value
            raise _Drop()
        raise _Stall()

    async def _retransmit_while_cut(self, client: Process, server: str) -> None:
        """Wait while the network cuts ``client`` from ``server``, as TCP does with an
        unacknowledged request: retransmissions at 0.2 s doubling, capped at 120 s, until
        the link is whole or ``stall_bound_s`` has passed (then the connection is closed,
        as Linux closes it after ``tcp_retries2`` = 15 tries, ~924.6 s)."""
        network = self.world.network
        if not network.cut(client.name, server):
            return
        first = self.world.now
        attempt = 0
        while network.cut(client.name, server):
            wait = tcp_backoff(attempt)
            if self.world.now + wait - first > self.config.stall_bound_s:
                await self.world.sleep(max(0.0, first + self.config.stall_bound_s - self.world.now))
                raise _Drop(outcome="timed-out", reason="connection timed out")
            attempt += 1
            self.world.record("retransmit", src=client.name, dst=server, attempt=attempt, after_s=round(self.world.now + wait - first, 6))
            await self.world.sleep(wait)
            if not client.running:
                raise _Drop(outcome="client-down", reason="client down")

    async def _api(self, replica: _Replica, client: Process, request: Request, record: dict[str, Any]) -> Response:
        """A resource request, journaled as ``api-op`` when it mutates and as ``api-read``
        when it is a get or list, with the fields the simulated client journals
        (:mod:`chaoskube.api.oplog`): preconditions, grace and propagation of a delete,
        the answered version and uid, the versions a read returned (a paged list: the
        whole list the server answered at its revision, of which the client got a page)."""
        state = self._clients.setdefault(client.name, _Client())
        # a review is answered, not stored: no object history to judge
        journaled = request.verb in _MUTATING and not request.dry_run and request.resource not in REVIEWS
        read = request.verb in ("get", "list")
        op_id = 0
        fields = op_fields(client.name, request)
        started = self.world.now
        if journaled:
            state.ops += 1
            op_id = state.ops
            self.world.record("api-op", phase="invoke", op_id=op_id, **fields, **preconditions(request))
        state.requests += 1
        request = replace(request, id=f"{client.name}/{client.incarnation}/http/{state.requests}")
        try:
            response = await self._call(client, replica.name, request)
        except (_Stall, _Drop) as error:
            phase = "info" if isinstance(error, _Stall) else "fail"
            if journaled:
                reason = "no answer" if isinstance(error, _Stall) else error.reason
                self.world.record("api-op", phase=phase, op_id=op_id, **fields, code=0, reason=reason, request=request.id, server=replica.name)
            elif read:
                self.world.record("api-read", **read_fields(client.name, request, None, started, phase, replica.name))
            raise
        phase = "ok" if response.ok else "info" if response.code in (500, 504) else "fail"
        if journaled and self.lose_response is not None and self.lose_response(client.name, request, response):
            self.world.record("api-op", phase="info", op_id=op_id, **fields, code=0, reason="response lost", request=request.id, server=replica.name)
            raise _Drop()
        if journaled:
            answered = end_fields(response)
            name = answered.pop("answered_name", "")
            end = {**fields, "code": answered.pop("code"), "reason": answered.pop("reason"), "request": request.id, "server": response.server or replica.name, **answered}
            if not end["name"] and name:
                end["name"] = name
            self.world.record("api-op", phase=phase, op_id=op_id, **end)
            if request.verb == "patch" and response.ok and request.patch_type in ("merge", "json", "strategic") and not request.subresource and response.object is not None:
                # for api-patch: the patch as the server applied it, and the version it answered
                meta = response.object.metadata
                self.world.record(
                    "api-patch", client=client.name, resource=request.resource, key=f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name,
                    patch_type=request.patch_type, patch=request.body, resource_version=meta.resource_version, call=round(started, 9),
                )
        elif read:
            self.world.record("api-read", **read_fields(client.name, request, response, started, phase, replica.name))
        return response

    # ------------------------------------------------------------------ dispatch
    async def _dispatch(self, replica: _Replica, client: Process, info: RequestInfo, method: str, query: dict[str, str], headers: dict[str, str], body: bytes, credentials: Credentials, record: dict[str, Any]) -> tuple[int, bytes, list[tuple[str, str]]]:
        if not info.resource_request:
            return await self._non_resource(replica, client, info.path, query, headers, credentials)
        kind = info.kind
        try:
            if kind is None:
                raise StatusError(Status(404, "NotFound", "the server could not find the requested resource"))
            if info.verb == "deletecollection" and (info.subresource or REVIEWS.get(kind.resource) == kind):
                raise StatusError(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource (deletecollection {info.resource})"))
            if info.verb == "":
                raise StatusError(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})"))
            if info.subresource == "scale":
                return await self._scale(replica, client, info, kind, query, headers, body, credentials, record)
            if kind.kind == "Pod" and kind.api_version == "v1" and info.subresource in _CONNECT_SUBRESOURCES:
                return await self._pod_connect(replica, client, info, kind, query, credentials, record)
            request, warnings = self._request(info, kind, query, headers, body, credentials)
            if request.verb == "list" and (query.get("limit") or query.get("continue")):
                return await self._paged_list(replica, client, info, kind, request, query, headers, record)
            response = await self._api(replica, client, request, record)
            return self._encode(info, kind, request, response, headers, query, warnings=warnings)
        except StatusError as error:
            return self._failure(error.status, info, kind)

    def _failure(self, status: Status, info: RequestInfo, kind: KindInfo | None, warnings: tuple[str, ...] = (), *, continue_token: str = "") -> tuple[int, bytes, list[tuple[str, str]]]:
        extra = [("Retry-After", str(status.retry_after_seconds))] if status.retry_after_seconds else []
        extra += _warning_headers(warnings)
        group = group_version(kind)[0] if kind is not None else info.group
        payload = codec.encode_status(status, name=info.name, group=group, resource=info.resource)
        if continue_token:
            payload["metadata"]["continue"] = continue_token
        data, content_type = codec.render(payload, codec.negotiate(_ACCEPT.get(), table=False))
        return status.code, data, [("Content-Type", content_type), *extra]

    def _media(self, headers: dict[str, str], kind: KindInfo | None, *, table: bool = True, stream: bool = False) -> codec.MediaType | None:
        """The negotiated answer type for ``kind`` (protobuf only for a kind with a
        protobuf form: built-in kinds)."""
        accept = headers.get("accept", "application/json")
        protobuf = "protobuf" in accept and kind is not None and not issubclass(kind.type, CustomObject) and kubeproto.supports(kind.api_version, kind.kind)
        return codec.negotiate(accept, table=table, protobuf=protobuf, stream=stream)

    def _request(self, info: RequestInfo, kind: KindInfo, query: dict[str, str], headers: dict[str, str], body: bytes, credentials: Credentials) -> tuple[Request, tuple[str, ...]]:
        """The wire request of an HTTP request, and the warnings decoding its body gave."""
        verb, sub = info.verb, info.subresource
        field_validation = query.get("fieldValidation") or "Warn"
        dry_run = query.get("dryRun") == "All"
        if query.get("dryRun") not in (None, "", "All"):
            raise StatusError(bad_request(f"dryRun: unsupported value {query['dryRun']!r} (only \"All\")"))
        common: dict[str, Any] = {
            "verb": verb, "resource": kind.resource, "namespace": info.namespace, "name": info.name,
            "subresource": sub, "credentials": credentials, "dry_run": dry_run, "version": _custom_version(kind),
        }
        if verb in ("get", "list"):
            common.update(label_selector=query.get("labelSelector", ""), field_selector=views.field_selector_in(kind, query.get("fieldSelector", "")),
                          resource_version=query.get("resourceVersion", ""), resource_version_match=query.get("resourceVersionMatch", ""))
            if verb == "get":
                common.pop("label_selector")
                common.pop("field_selector")
                common.pop("resource_version_match")
            return Request(**common), ()
        content_type = headers.get("content-type", "application/json")
        protobuf_patch = verb == "patch" and content_type.split(";")[0].strip().lower() == kubeproto.PROTOBUF
        common["field_manager"], common["force"] = _write_options(verb, sub, content_type, query, headers)
        data = codec.decode_body(body, content_type, kind) if body and not protobuf_patch else None  # a patch's type is checked first (patch.go)
        data = views.patch_in(kind, data) if verb == "patch" else views.object_in(kind, data)
        if verb == "create" and sub == "eviction" and kind.kind == "Pod":
            return Request(**{**common, "body": codec.decode_eviction(data, info.namespace, info.name)}), ()
        if verb == "create" and sub == "binding" and kind.kind == "Pod":
            return Request(**{**common, "body": codec.decode_binding(data, info.namespace, info.name)}), ()
        if verb == "create" and REVIEWS.get(kind.resource) == kind:
            return Request(**{**common, "body": _decode_review(data, kind)}), ()
        if verb in ("create", "update"):
            obj, warnings = codec.decode_object(data, views.stored_kind(kind), field_validation)
            if verb == "create" and not info.namespace and kind.namespaced:
                common["namespace"] = obj.metadata.namespace or "default"
            if verb == "create" and sub:
                raise StatusError(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource (create {info.resource}/{sub})"))
            if issubclass(kind.type, CustomObject):  # pruned by its CRD's schema, in the server
                common["field_validation"] = field_validation
            return Request(**{**common, "body": obj}), warnings
        if verb == "patch":
            media = content_type.split(";")[0].strip().lower()
            patch_type = _PATCH_TYPES.get(media)
            if patch_type is None:
                raise StatusError(Status(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted media types include: {', '.join(_PATCH_TYPES)}"))
            if data is None:
                raise StatusError(bad_request("the body of a patch is required"))
            return Request(**{**common, "body": data, "patch_type": patch_type, "field_validation": field_validation}), ()
        if verb == "delete":
            options, body_dry_run = codec.delete_options(query, data)
            return Request(**{**common, "delete_options": options, "dry_run": dry_run or body_dry_run}), ()
        if verb == "deletecollection":
            options, body_dry_run = codec.delete_options(query, data)
            selectors = {"label_selector": query.get("labelSelector", ""), "field_selector": views.field_selector_in(kind, query.get("fieldSelector", ""))}
            return Request(**{**common, **selectors, "delete_options": options, "dry_run": dry_run or body_dry_run}), ()
        raise StatusError(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({verb})"))

    def _encode(self, info: RequestInfo, kind: KindInfo, request: Request, response: Response, headers: dict[str, str], query: dict[str, str], *, continue_token: str = "", remaining: int | None = None, items: list[dict[str, Any]] | None = None, warnings: tuple[str, ...] = ()) -> tuple[int, bytes, list[tuple[str, str]]]:
        warnings = tuple(warnings) + tuple(response.warnings)
        if not response.ok:
            assert response.status is not None
            return self._failure(response.status, info, kind, warnings)
        extra = _warning_headers(warnings)
        media = self._media(headers, kind, table=request.verb in ("get", "list"))
        if media is None:
            return self._failure(Status(406, "NotAcceptable", f"only the following media types are accepted: {_ACCEPTED}"), info, kind)
        extra = [("Content-Type", kubeproto.PROTOBUF if media.protobuf else "application/json"), *extra]
        if request.verb in ("list", "deletecollection"):
            listed = items if items is not None else [views.object_out(kind, codec.encode_object(obj)) for obj in response.items]
            if media.as_ == "Table":
                payload = tables.table(kind.kind, listed, self.world.now, include_object=query.get("includeObject", "Metadata"), resource_version=response.resource_version, continue_token=continue_token, remaining=remaining, custom=self._custom_kind(kind))
            elif media.as_.startswith("PartialObjectMetadata"):
                payload = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": response.resource_version}, "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata", {})} for obj in listed]}
            else:
                payload = codec.encode_list(kind, listed, response.resource_version, continue_token=continue_token, remaining=remaining)
            return 200, self._render(payload, media), extra
        if request.verb == "create" and request.subresource == "eviction":
            return 201, self._render(codec.success_status(201), media), extra
        if response.object is None:
            return response.code, self._render(codec.success_status(response.code, {"name": info.name, "kind": info.resource}), media), extra
        obj = views.object_out(kind, codec.encode_object(response.object))
        if media.as_ == "Table":
            return 200, codec.dumps(tables.table(kind.kind, [obj], self.world.now, include_object=query.get("includeObject", "Metadata"), custom=self._custom_kind(kind))), extra
        if media.as_.startswith("PartialObjectMetadata"):
            return 200, self._render({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata", {})}, media), extra
        return response.code, self._render(obj, media), extra

    def _render(self, payload: dict[str, Any], media: codec.MediaType) -> bytes:
        """JSON, or protobuf (Tables are always JSON). An object the protobuf schema cannot
        hold (a field newer than the schema: a bug of the kinds' model) is a 500."""
        if media.protobuf and payload.get("kind") != "Table":
            try:
                return kubeproto.encode(payload)
            except kubeproto.ProtoError as error:
                raise StatusError(Status(500, "InternalError", f"Internal error occurred: the object cannot be encoded in protobuf: {error}")) from None
        return codec.dumps(payload)

    # ------------------------------------------------------------------ pagination
    async def _paged_list(self, replica: _Replica, client: Process, info: RequestInfo, kind: KindInfo, request: Request, query: dict[str, str], headers: dict[str, str], record: dict[str, Any]) -> tuple[int, bytes, list[tuple[str, str]]]:
        """``limit``/``continue`` (``storage/etcd3/store.go`` ``GetList``): the first page
        reads at the current revision (or the one asked for), later pages at the
        revision of the token; the token is upstream's: base64 of
        ``{"v":"meta.k8s.io/v1","rv":N,"start":"<key after the last one>"}``. Once N is
        compacted the answer is 410 Expired whose Status carries a fresh token with rv -1
        (``etcd3/errors.go`` ``handleCompactedErrorForPaging``): continuing with it reads
        the rest at the latest revision (an inconsistent list the client opted into).
        Each page is journaled as ``list-page`` for the ``api-pagination`` checker."""
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise StatusError(bad_request(f"limit: invalid value {query['limit']!r}")) from None
        token = query.get("continue", "")
        start = ""
        token_rv: int | None = None
        if token:
            if request.resource_version not in ("", "0"):
                raise StatusError(bad_request("specifying resource version is not allowed when using continue"))
            try:
                decoded = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
                revision = int(decoded["rv"])
                start = str(decoded["start"])
                assert decoded.get("v") == "meta.k8s.io/v1" and (revision > 0 or revision == -1)
            except (ValueError, KeyError, TypeError, AssertionError, orjson.JSONDecodeError):
                raise StatusError(bad_request("continue key is not valid: the token was not produced by this server")) from None
            token_rv = revision
            request = _continue_at(request, revision)
        elif limit and request.resource_version == "0":
            limit = 0  # the watch cache answers "0" whole, ignoring limit (cacher.go)
        page_record: dict[str, Any] = {
            "client": client.name, "server": replica.name, "resource": request.resource, "namespace": request.namespace,
            "label_selector": request.label_selector, "field_selector": request.field_selector, "limit": limit,
            "token_rv": token_rv, "start": start,
        }
        try:
            response = await self._api(replica, client, request, record)
        except (_Stall, _Drop):
            self.world.record("list-page", **page_record, code=0)
            raise
        if not response.ok:
            assert response.status is not None
            if token and response.code == 410:
                fresh = _continue_token(-1, start)
                self.world.record("list-page", **page_record, code=410, next_rv=-1, next_start=start)
                return self._failure(gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."), info, kind, continue_token=fresh)
            self.world.record("list-page", **page_record, code=response.code)
            return self._encode(info, kind, request, response, headers, query)
        objects = [obj for obj in response.items if _key(obj) >= start]
        page = objects[:limit] if limit else objects
        rest = len(objects) - len(page)
        next_token = ""
        answered = {"code": response.code, "resource_version": int(response.resource_version), "items": [[_key(obj), obj.metadata.resource_version] for obj in page]}
        if rest > 0:
            following = _key(page[-1]) + "\x00"
            next_token = _continue_token(int(response.resource_version), following)
            answered.update(next_rv=int(response.resource_version), next_start=following)
        self.world.record("list-page", **page_record, **answered)
        listed = [views.object_out(kind, codec.encode_object(obj)) for obj in page]
        return self._encode(info, kind, request, response, headers, query, continue_token=next_token, remaining=rest if rest > 0 else None, items=listed)

    # ------------------------------------------------------------------ pods' log, exec, attach, port-forward
    async def _pod_connect(self, replica: _Replica, client: Process, info: RequestInfo, kind: KindInfo, query: dict[str, str], credentials: Credentials, record: dict[str, Any]) -> tuple[int, bytes, list[tuple[str, str]]]:
        """``pods/log`` from :class:`~chaoskube.apiserver.http.logs.ContainerLogs`;
        ``exec``, ``attach``, ``portforward`` and ``proxy`` refused with a Status that says
        why (a simulated container has no process and no socket). The pod is read first
        (as ``get pods``: 404 for a missing pod, 403 for a user who may not read it)."""
        get = Request(verb="get", resource="pods", namespace=info.namespace, name=info.name, credentials=credentials)
        response = await self._api(replica, client, get, record)
        if not response.ok:
            assert response.status is not None
            raise StatusError(response.status)
        pod = response.object
        if info.subresource != "log":
            if info.verb not in ("get", "create"):
                raise StatusError(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({info.verb} pods/{info.subresource})"))
            raise StatusError(Status(400, "BadRequest", (
                f"pods/{info.subresource} is not served by chaoskube: the containers of pod {info.namespace}/{info.name} are simulated "
                f"(no process to {_CONNECT_WORDS[info.subresource]}); `kubectl logs` shows what the simulated containers did")))
        if info.verb != "get":
            raise StatusError(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({info.verb} pods/log)"))
        container, options = logs.log_options(pod, query)
        lines = self.logs.lines(f"{info.namespace}/{info.name}", container, previous=options["previous"])
        if lines is None:
            raise StatusError(bad_request(f'previous terminated container "{container}" in pod "{info.name}" not found'))
        spec = next((c for c in [*pod.spec.containers, *pod.spec.init_containers] if c.name == container), None)
        if spec is not None:
            lines = logs.with_declared(lines, spec)
        return 200, logs.render(lines, self.world.now, options), [("Content-Type", "text/plain")]

    # ------------------------------------------------------------------ scale
    async def _scale(self, replica: _Replica, client: Process, info: RequestInfo, kind: KindInfo, query: dict[str, str], headers: dict[str, str], body: bytes, credentials: Credentials, record: dict[str, Any]) -> tuple[int, bytes, list[tuple[str, str]]]:
        """The ``scale`` subresource (``autoscaling/v1`` Scale) of a Deployment, ReplicaSet,
        StatefulSet, ReplicationController or a custom kind whose CRD declares it, served
        by the API server (``pkg/registry/apps/*/storage``; apiextensions' ``ScaleREST``).
        GET reads it; PUT writes it (a Scale with a stale resourceVersion is 409
        Conflict); PATCH applies a merge or JSON patch to the Scale read, then writes it
        with that resourceVersion as the precondition (re-read on a conflict unless the
        patch itself named a resourceVersion)."""
        if "scale" not in subresources_of(kind, self._custom.get(replica.name, ())):
            raise StatusError(not_found(info.resource, info.name))
        common = {"resource": kind.resource, "namespace": info.namespace, "name": info.name, "subresource": "scale", "credentials": credentials, "version": _custom_version(kind)}
        dry_run = query.get("dryRun") == "All"
        field_manager, _ = _write_options(info.verb, "scale", headers.get("content-type", "application/json"), query, headers)
        get = Request(verb="get", **common)
        for _ in range(8):
            current = await self._api(replica, client, get, record)
            if not current.ok:
                assert current.status is not None
                raise StatusError(current.status)
            scale = codec.encode_object(current.object)
            answer = self._media(headers, kind, table=False)
            if answer is None:
                raise StatusError(Status(406, "NotAcceptable", f"only the following media types are accepted: {_ACCEPTED}"))
            served = [("Content-Type", kubeproto.PROTOBUF if answer.protobuf else "application/json")]
            if info.verb == "get":
                return 200, self._render(scale, answer), served
            if info.verb not in ("update", "patch"):
                raise StatusError(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({info.verb} {info.resource}/scale)"))
            data = codec.decode_body(body, headers.get("content-type", "application/json"), kind)
            media = ""
            if info.verb == "update":
                wanted = data
            else:
                from chaoskube.api.patch import PatchError, apply_patch, merge_patch

                media = headers.get("content-type", "").split(";")[0].strip().lower()
                if media == "application/strategic-merge-patch+json":
                    media = "application/merge-patch+json"  # a Scale has no merged lists: the same result
                if media not in ("application/json-patch+json", "application/merge-patch+json"):
                    raise StatusError(Status(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted media types include: {', '.join(_PATCH_TYPES)}"))
                try:
                    wanted = apply_patch(scale, data) if media == "application/json-patch+json" else merge_patch(scale, data)
                except PatchError as error:
                    raise StatusError(Status(422, "Invalid", str(error))) from None
            if not isinstance(wanted, dict) or not isinstance((wanted.get("spec") or {}).get("replicas", 0), int):
                raise StatusError(bad_request("the body must be an autoscaling/v1 Scale with an integer spec.replicas"))
            # The precondition a client asked for: a PUT's Scale's resourceVersion, or one the
            # patch itself sets. The patched Scale always carries the version it was read at
            # (the patch applies to the read Scale): that version guards this attempt only,
            # and a conflict on it is retried with a fresh read, as the patch handler's
            # GuaranteedUpdate does (``endpoints/handlers/patch.go``).
            demanded = str((wanted.get("metadata") or {}).get("resourceVersion") or "") if info.verb == "update" else _patch_demands_version(data, media)
            version = demanded or scale["metadata"].get("resourceVersion", "")
            meta = current.object.metadata
            written = Scale(metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid, resource_version=version), spec=ScaleSpec(replicas=int((wanted.get("spec") or {}).get("replicas", 0))))
            response = await self._api(replica, client, Request(verb="update", body=written, dry_run=dry_run, field_manager=field_manager, **common), record)
            if response.ok:
                return 200, self._render(codec.encode_object(response.object), answer), served + _warning_headers(response.warnings)
            if response.code == 409 and not demanded and info.verb == "patch":
                continue  # someone wrote in between: read again
            assert response.status is not None
            raise StatusError(response.status)
        raise StatusError(conflict(info.resource, info.name, "the object kept changing"))

    # ------------------------------------------------------------------ non-resource paths
    async def _non_resource(self, replica: _Replica, client: Process, path: str, query: dict[str, str], headers: dict[str, str], credentials: Credentials) -> tuple[int, bytes, list[tuple[str, str]]]:
        response = await self._call(client, replica.name, NonResourceRequest(path=path, credentials=credentials))
        if not response.ok:
            assert response.status is not None
            return response.status.code, codec.dumps(codec.encode_status(response.status)), []
        self._custom[replica.name] = custom_kinds(response.items)
        document, content_type = self._document(path, headers, replica)
        if document is None:
            payload = codec.encode_status(Status(404, "NotFound", "the server could not find the requested resource"))
            return 404, codec.dumps(payload), []
        if isinstance(document, bytes):
            return 200, document, [("Content-Type", content_type)]
        return 200, codec.dumps(document), [("Content-Type", content_type)]

    async def _refresh_custom(self, replica: _Replica, client: Process, path: str, credentials: Credentials) -> None:
        """Learn the CRDs ``replica`` serves now (a discovery round trip, as for a
        discovery document; raises _Stall/_Drop alike)."""
        response = await self._call(client, replica.name, NonResourceRequest(path=path, credentials=credentials))
        if response.ok:
            self._custom[replica.name] = custom_kinds(response.items)

    def _custom_kind(self, kind: KindInfo) -> CustomKind | None:
        """The custom kind of ``kind``: at its version, else at another the CRD serves."""
        candidates = [found for kinds in self._custom.values() for found in kinds if found.info.resource == kind.resource]
        return next((found for found in candidates if found.info == kind), candidates[0] if candidates else None)

    def _document(self, path: str, headers: dict[str, str], replica: _Replica) -> tuple[Any, str]:
        custom = self._custom.get(replica.name, ())
        path = "/" + path.strip("/")
        accept = headers.get("accept", "")
        json_type = "application/json"
        if path == "/version":
            return SERVER_VERSION, json_type
        if path in ("/healthz", "/livez", "/readyz"):
            return b"ok", "text/plain; charset=utf-8"
        if path in ("/api", "/apis"):
            for media in codec.parse_accept(accept):
                if media.params.get("g") == "apidiscovery.k8s.io" and media.as_ == "APIGroupDiscoveryList" and media.params.get("v") in discovery.AGGREGATED_TYPES:
                    version = media.params["v"]
                    content = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
                    return discovery.aggregated(path == "/api", version, custom), content
            if path == "/api":
                return discovery.api_versions(f"{self.config.host}:{replica.port}"), json_type
            return discovery.api_group_list(custom), json_type
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            return discovery.api_resource_list("", parts[1]), json_type
        if parts[0] == "apis" and len(parts) == 2:
            return discovery.api_group(parts[1], custom), json_type
        if parts[0] == "apis" and len(parts) == 3:
            return discovery.api_resource_list(parts[1], parts[2], custom), json_type
        if path == "/openapi/v3":
            return openapi.v3_root(custom), json_type
        if path.startswith("/openapi/v3/"):
            return openapi.v3_document(path.removeprefix("/openapi/v3/"), custom), json_type
        if path == "/openapi/v2":
            if any(media.type == "application/json" for media in codec.parse_accept(accept)):
                return openapi.v2_document(custom), json_type
            return None, json_type  # protobuf only: not served (clients fall back)
        return None, json_type

    # ------------------------------------------------------------------ watches
    async def _watch(self, replica: _Replica, client: Process, stream: Any, connection: h11.Connection, info: RequestInfo, query: dict[str, str], headers: dict[str, str], credentials: Credentials, record: dict[str, Any], started: float) -> None:
        kind = info.kind
        if kind is None or info.subresource:
            code, payload, extra = self._failure(Status(404, "NotFound", "the server could not find the requested resource"), info, kind)
            self._journal_http(record, code, started)
            await _send(stream, connection, code, payload, headers=extra)
            return
        media = self._media(headers, kind, stream=True)
        if media is None:
            code, payload, extra = self._failure(Status(406, "NotAcceptable", f"only the following media types are accepted: {_ACCEPTED}"), info, kind)
            self._journal_http(record, code, started)
            await _send(stream, connection, code, payload, headers=extra)
            return
        as_table = media.as_ == "Table"
        protobuf = media.protobuf
        try:
            field_selector = views.field_selector_in(kind, query.get("fieldSelector", ""))
        except StatusError as error:
            code, payload, extra = self._failure(error.status, info, kind)
            self._journal_http(record, code, started)
            await _send(stream, connection, code, payload, headers=extra)
            return
        if info.name:
            name_selector = f"metadata.name={info.name}"
            field_selector = f"{field_selector},{name_selector}" if field_selector else name_selector
        timeout_seconds = None
        if query.get("timeoutSeconds"):
            try:
                timeout_seconds = int(query["timeoutSeconds"])
            except ValueError:
                timeout_seconds = None
        router = self._router(client)
        state = self._clients.setdefault(client.name, _Client())
        state.requests += 1
        watch_id = f"{client.name}/{client.incarnation}/http-watch/{state.requests}"
        send, receive = trio.open_memory_channel[WatchMessage](WATCH_BUFFER_MESSAGES)
        watch = router[watch_id] = _Watch(watch_id, send, receive, client=client.name)

        def reset() -> None:
            watch.reset = True
            router.pop(watch_id, None)
            send.close()

        # the stream rides the client's TCP connection: its events are held across a
        # partition and retransmitted, in order, the connection reset past the bound
        self.world.network.open_tcp_stream(watch_id, bound_s=self.config.stall_bound_s, on_reset=reset)
        request = Request(
            verb="watch", resource=kind.resource, namespace=info.namespace, credentials=credentials, watch_id=watch_id, version=_custom_version(kind),
            label_selector=query.get("labelSelector", ""), field_selector=field_selector,
            resource_version=query.get("resourceVersion", ""), resource_version_match=query.get("resourceVersionMatch", ""),
            allow_watch_bookmarks=query.get("allowWatchBookmarks", "").lower() in ("1", "true"), timeout_seconds=timeout_seconds,
            id=watch_id,
        )
        self._statistics["watches"] += 1
        try:
            try:
                response = self._expired_for(client.name, request) or await self._call(client, replica.name, request)
            except _Stall:
                self._journal_http(record, 0, started, outcome="stalled")
                await self._stall(stream)
                return
            except _Drop as error:
                self._journal_http(record, 0, started, outcome=error.outcome)
                return
            if not response.ok and response.code != 410:
                assert response.status is not None
                code, payload, extra = self._failure(response.status, info, kind)
                self._journal_http(record, code, started)
                await _send(stream, connection, code, payload, headers=extra)
                return
            self._journal_http(record, 200, started, outcome="watch")
            # for api-watch: an outside client's watch is judged as an informer's is, one
            # session per watch, from the resourceVersion it asked for
            selectors = {key: value for key, value in (("label_selector", request.label_selector), ("field_selector", request.field_selector)) if value}
            self.world.record(
                "watch-open", name=f"http:{watch_id}", watch=watch_id, server=replica.name, resource=kind.resource,
                namespace=info.namespace, from_rv=request.resource_version, outside=True, client=client.name, **selectors,
            )
            # watch.go: a stream's type is the serializer's with ";stream=watch" (JSON as is)
            content_type = f"{kubeproto.PROTOBUF};stream=watch" if protobuf else "application/json"
            await stream.send_all(connection.send(h11.Response(status_code=200, reason=b"OK", headers=[("Content-Type", content_type), ("Transfer-Encoding", "chunked"), ("Cache-Control", "no-cache, private")])))
            if not response.ok:
                assert response.status is not None
                event = {"type": "ERROR", "object": codec.encode_status(response.status)}
                self.world.record("watch-recv", name=f"http:{watch_id}", watch=watch_id, events=[["ERROR", "", str(response.code)]])
                await stream.send_all(connection.send(h11.Data(data=_watch_frame(event, protobuf))))
                await stream.send_all(connection.send(h11.EndOfMessage()))
                return
            await self._stream_events(stream, connection, watch, kind, as_table, query, protobuf=protobuf, partial=media.as_.startswith("PartialObjectMetadata"))
        finally:
            router.pop(watch_id, None)
            send.close()
            self.world.network.close_tcp_stream(watch_id)
            if client.running and self.world.process(replica.name).alive:
                client.send(replica.name, WatchStop(watch_id), port=API_PORT, duplicable=False)

    async def _stream_events(self, stream: Any, connection: h11.Connection, watch: _Watch, kind: KindInfo, as_table: bool, query: dict[str, str], *, protobuf: bool = False, partial: bool = False) -> None:
        """``partial``: a metadata-only watch (client-go's metadata informers, as the garbage
        collector's): each object as a ``PartialObjectMetadata`` (``handlers/watch.go``
        transforms every event's object, as ``as=PartialObjectMetadata`` asks)."""
        headers_sent = False
        custom = self._custom_kind(kind)

        async def client_gone(cancel: trio.CancelScope) -> None:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    cancel.cancel()
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(client_gone, nursery.cancel_scope)
            ended_cleanly = False
            async for message in watch.receive:
                if message.sequence != watch.next_sequence:
                    break  # a lost message: end the stream; the client watches again
                watch.next_sequence += 1
                if self._withheld_now(watch, message):
                    if message.closed:
                        break
                    continue
                lines = []
                for event in message.events:
                    encoded = codec.encode_watch_event(kind, event)
                    encoded["object"] = views.object_out(kind, encoded["object"])
                    if as_table and event.type in ("ADDED", "MODIFIED", "DELETED"):
                        encoded["object"] = tables.table(kind.kind, [encoded["object"]], self.world.now, include_object=query.get("includeObject", "Metadata"), headers=not headers_sent, custom=custom)
                        headers_sent = True
                    if partial and event.type != "ERROR":
                        encoded["object"] = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": encoded["object"].get("metadata", {})}
                    lines.append(_watch_frame(encoded, protobuf))
                if lines:
                    await stream.send_all(connection.send(h11.Data(data=b"".join(lines))))
                    self.world.record("watch-recv", name=f"http:{watch.watch_id}", watch=watch.watch_id, events=[_watch_summary(event) for event in message.events])
                if message.closed:
                    ended_cleanly = True
                    break
            del ended_cleanly
            nursery.cancel_scope.cancel()
        if watch.reset:
            # TCP gave up across the partition: the connection is reset, the body never
            # completed (the client sees the stream break and watches again)
            self.world.record("watch-reset", name=f"http:{watch.watch_id}", watch=watch.watch_id, client=watch.client, reason="connection timed out")
            return
        if connection.our_state is h11.SEND_BODY:
            await stream.send_all(connection.send(h11.EndOfMessage()))


# ----------------------------------------------------------------------------- helpers
def _continue_at(request: Request, revision: int) -> Request:
    """The read a continue token asks for: exactly at its revision, or at the latest for
    the fresh token of a 410 (rv -1, ``storage.DecodeContinue``)."""
    if revision == -1:
        return replace(request, resource_version="", resource_version_match="")
    return replace(request, resource_version=str(revision), resource_version_match="Exact")


def _continue_token(revision: int, start: str) -> str:
    """Upstream's continue token (``storage.EncodeContinue``): base64 of the version, the
    revision to read at (-1: the latest) and the key to start from."""
    return base64.urlsafe_b64encode(orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start})).decode().rstrip("=")


def _watch_summary(event: WatchEvent) -> list[str]:
    """``[type, key, resourceVersion]`` of one watch event the front sent, in the shape
    the informers journal (``watch-recv``, :mod:`chaoskube.client.informer`)."""
    if event.type == "ERROR":
        return ["ERROR", "", str(event.status.code if event.status is not None else "")]
    if event.object is None:
        return [event.type, "", event.resource_version]
    meta = event.object.metadata
    return [event.type, f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name, event.resource_version or meta.resource_version]


def _watch_frame(event: dict[str, Any], protobuf: bool) -> bytes:
    """One event of a watch stream: a JSON line, or a length-prefixed ``metav1.WatchEvent``
    whose object is the enveloped object (:func:`kubeproto.encode_watch_frame`)."""
    if protobuf:
        return kubeproto.encode_watch_frame(event["type"], kubeproto.encode(event["object"]))
    return codec.dumps(event) + b"\n"


def _decode_review(data: Any, kind: KindInfo) -> Any:
    """The body of a review's create (its ``spec``; ``status`` is the server's)."""
    handled = f'{kind.kind} in version "{kind.api_version.rpartition("/")[2]}" cannot be handled as a {kind.kind}'
    if not isinstance(data, dict):
        raise StatusError(bad_request(f"{handled}: the body is not a JSON object"))
    if data.get("kind") not in (None, "", kind.kind) or data.get("apiVersion") not in (None, "", kind.api_version):
        raise StatusError(bad_request(f"{handled}: the body is a {data.get('apiVersion')}/{data.get('kind')}"))
    fields = {key: value for key, value in data.items() if key in ("metadata", "spec")}
    fields["metadata"] = {key: value for key, value in (fields.get("metadata") or {}).items() if key in ("name", "namespace", "generateName", "labels", "annotations")}
    try:
        return msgspec.convert(fields, kind.type)
    except msgspec.ValidationError as error:
        raise StatusError(bad_request(f"{handled}: {error}")) from None


def _patch_demands_version(patch: Any, media: str) -> str:
    """The resourceVersion a merge or JSON patch sets (its own precondition), or ""."""
    if media == "application/json-patch+json":
        if isinstance(patch, list):
            for op in patch:
                if isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" and op.get("op") in ("add", "replace", "test"):
                    return str(op.get("value") or "")
        return ""
    if isinstance(patch, dict) and isinstance(patch.get("metadata"), dict):
        return str(patch["metadata"].get("resourceVersion") or "")
    return ""


def _key(obj: Any) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _custom_version(kind: KindInfo) -> str:
    """The version of the URL, for a custom kind (its CRD must serve it: the server
    answers 404 at a version it does not serve); "" for the built-in kinds, served at one
    version each."""
    return group_version(kind)[1] if issubclass(kind.type, CustomObject) else ""


def _warning_headers(warnings: tuple[str, ...]) -> list[tuple[str, str]]:
    """RFC 7234 warnings as kube-apiserver sends them: ``299 - "text"``."""
    return [("Warning", '299 - "' + warning.replace('"', "'") + '"') for warning in warnings]


def _certificate_credentials(stream: trio.SSLStream) -> Credentials:
    """The verified client certificate's CN (user) and O attributes (groups), if any."""
    try:
        peer = stream.getpeercert()
    except (ValueError, AttributeError):
        return Credentials()
    if not peer:
        return Credentials()
    common_name = ""
    organizations: list[str] = []
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                common_name = value
            elif key == "organizationName":
                organizations.append(value)
    return Credentials(common_name=common_name, organizations=tuple(organizations))


_TROUBLE = (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError, h11.LocalProtocolError, ssl.SSLError, OSError)


def _connection_trouble(error: BaseException) -> bool:
    """A broken or closed connection (or a group of nothing else)."""
    if isinstance(error, BaseExceptionGroup):
        return all(_connection_trouble(inner) for inner in error.exceptions)
    return isinstance(error, _TROUBLE)


def _phrase(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


async def _next_event(stream: Any, connection: h11.Connection) -> Any:
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await stream.receive_some(65536)
        connection.receive_data(data)


async def _send(stream: Any, connection: h11.Connection, status: int, payload: bytes, *, headers: list[tuple[str, str]] | None = None, close: bool = False, head: bool = False) -> None:
    extra = list(headers or [])
    if not any(name.lower() == "content-type" for name, _ in extra):
        extra.insert(0, ("Content-Type", "application/json"))
    extra.append(("Content-Length", str(len(payload))))
    extra.append(("Cache-Control", "no-cache, private"))
    if close:
        extra.append(("Connection", "close"))
    data = connection.send(h11.Response(status_code=status, headers=extra, reason=_phrase(status)))
    if payload and not head:
        data += connection.send(h11.Data(data=payload))
    data += connection.send(h11.EndOfMessage())
    await stream.send_all(data)


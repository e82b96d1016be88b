"""An API client for the simulated control plane: client-go's REST client and its retry
rules, watch streams, and a Lease lock for leader election over the API.

Contract of :meth:`ApiClient.request` (client-go ``rest/request.go`` ``request()`` and
``rest/with_retry.go``): it never raises for an API or network error; it returns a
:class:`~chaoskube.api.protocol.Response`. One request is at most ``attempts`` attempts,
each bounded by ``timeout_s`` (``http.Client.Timeout``), all of them by ``deadline_s``
(the context deadline ``Request.timeout`` puts around the retry loop). An attempt is
retried when, and only when, it is safe:

- connection refused (``Failed``: the server process is down, so the request definitely
  did not happen) -> retried for every verb, on the next server;
- no answer in time (``Unknown``: it may have happened) -> retried only for ``get`` and
  ``list``, on the next server; any other verb ends with a client-made 504 ``Timeout``;
- 429 or 5xx carrying ``retry_after_seconds`` -> the client sleeps that long (on the
  process's clock) and retries on the same server, at most :data:`MAX_RETRY_AFTER_RETRIES`
  times (``Request.maxRetries``, 10; ``with_retry.go`` ``checkWait``);
- anything else (4xx such as 409 Conflict, 5xx without Retry-After) is final.

A network retry goes at once to a server not yet tried in this request, else after 1 s
(the artificial ``Retry-After: 1`` that ``with_retry.go`` ``retryAfterResponse`` gives a
retryable error). client-go itself retries only connection resets of GETs: it has one
endpoint behind a load balancer, we have several servers and choose among them.

Ambiguity (chosen: a marker in the Status, so :class:`Response` keeps its type). A failed
response whose outcome is unknown carries :data:`AMBIGUOUS` in ``status.causes``: a
client-side timeout (504 ``Timeout`` made by the client), a server answer of 500
``InternalError`` or 504 ``Timeout`` (``apimachinery/pkg/apis/meta/v1/types.go``,
``StatusReasonInternalError``: "the outcome of the call is unknown"), or any failure that follows an earlier ambiguous attempt of the
same request (the first attempt may have been applied: a retry's 409 does not prove it was
not). :func:`is_ambiguous` reads the marker; :class:`ApiError` exposes it as ``ambiguous``.
A refused connection that exhausted the attempts is a client-made 503 with cause
:data:`REFUSED`.

Journal: each mutating request (create, update, patch, delete; evictions and bindings are
creates of a subresource) is recorded as ``api-op`` events: ``invoke``, then exactly one
of ``ok`` / ``fail`` (it definitely did not happen) / ``info`` (unknown), as
:mod:`chaoskube.etcd.client` does. The invoke carries the request's preconditions when it
has any (``precondition_rv``: an update's ``metadata.resourceVersion``, a merge patch's
``metadata.resourceVersion``, a delete's ``preconditions.resourceVersion``;
``precondition_uid``: a delete's ``preconditions.uid`` or an update's ``metadata.uid``),
and a delete's ``grace_s`` and ``propagation``; an ``ok`` carries the answered object's
``resource_version``, ``uid`` and (for a generated name) ``name``; a 404 or 409 ``fail``
carries the Status ``message``. Each read (get, list; not watches) is one ``api-read``
event at its end: ``call`` (when it was sent), ``phase`` ok / fail / info as above,
``code``, ``request_rv`` and ``rv_match`` (the resourceVersion asked for: "" is a quorum
read), ``label_selector`` and ``field_selector`` (when given), and on ``ok`` the
object's ``resource_version`` and ``uid`` (get), or the list's ``resource_version`` and its
``items`` as ``[key, resource_version]`` pairs (``key`` = ``namespace/name``, or ``name``
for a cluster-scoped kind). The api-linearizability checker reads both
(:mod:`chaoskube.checkers.api_linearizability`). Dry-run writes are not journaled. Request ids
are ``<client>/<incarnation>/<n>``, one per attempt; ``op_id`` is ``<incarnation>.<n>``;
both count per client name and process incarnation, so they never repeat in a run.

Objects and the wire: the simulated network passes objects by reference; the API server
copies every object it receives and every object it sends (:mod:`chaoskube.apiserver.watchcache`
contract 5, ``ApiServer._body``), as serialization would, so the client does not copy
again: what the typed helpers return is the caller's own, as with client-go's typed
clients. :func:`wire_copy` is there for servers that do not keep that contract.

Watches (:meth:`ApiClient.watch`): the ``watch`` request is answered once; events then
arrive as numbered :class:`~chaoskube.api.protocol.WatchMessage` on ``WATCH_PORT``, which
this module owns in every process that uses it (one router per process incarnation
dispatches them by ``watch_id``). A :class:`WatchStream` breaks on a lost message
(sequence gap), on a full buffer, and on a failed liveness probe, which models what
tells a real client its connection is gone: after ``probe_every_s`` (5 s) of silence it
sends a :class:`~chaoskube.api.protocol.WatchProbe`; a refused probe (the server process
is gone: a real kernel resets the TCP connection at once; the simulation notices within
one probe period, a trade of fidelity for speed: a probe per idle stream per second was a
third of a 50-node cluster's messages) or ``{"alive": False}`` breaks
the stream at once; so does a message the server had already sent at the previous probe
(its answer carries ``sent``, the last sequence number) that has still not arrived: the
network lost it, and a real stream is TCP, which retransmits it or resets the connection
but never skips it — without this, a lost last message (a pod's deletion, with nothing
after it on a kubelet's stream) would go unnoticed for ever; an unanswered probe breaks it only after ``read_idle_s + ping_s``
(30 s + 15 s) of silence, the HTTP/2 health check of ``apimachinery/pkg/util/net/http.go``
(``HTTP2_READ_IDLE_TIMEOUT_SECONDS`` 30, ``HTTP2_PING_TIMEOUT_SECONDS`` 15).

Leader election over the API: :class:`ApiLeaseLock` implements
:class:`chaoskube.client.leaderelection.LeaseLock` on a ``coordination.k8s.io/v1`` Lease
(client-go ``tools/leaderelection/resourcelock/leaselock.go``);
:func:`leader_election_client` builds the client with ``max(1 s, renewDeadline / 2)``
timeouts, as ``NewFromKubeconfig`` (``resourcelock/interface.go``) does.

Client-side rate limiting: client-go throttles every request attempt and every watch it
opens (``Request.tryThrottle``) with a token bucket per clientset
(``flowcontrol.NewTokenBucketRateLimiter``: golang.org/x/time/rate, full at start, refilled
at QPS, a waiter reserves its token and sleeps until it is due). ``ApiClient(rate=(qps,
burst))`` gives a client that bucket; :func:`own_rate_limit` gives the calling task and the
tasks it starts one of their own, on every client they use: kube-controller-manager builds a
clientset per controller (``ClientBuilder.ClientOrDie(name)``), each with its own bucket.
The components' defaults are :data:`KUBE_CONTROLLER_MANAGER_RATE` and the others below; a
client built without ``rate`` (a test's, an experiment's workload) is not throttled.

Non-guarantees: no request body streaming or pagination (a list is one answer); the
``user_agent`` is kept on the client only (``protocol.Request`` has no field for it).
"""

from __future__ import annotations

import contextvars
import re
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import msgspec
import outcome
import trio

from chaoskube.api.objects import Lease, LeaseSpec, Object, ObjectMeta, deep_copy
from chaoskube.api.oplog import end_fields, op_fields, preconditions, read_fields
from chaoskube.api.protocol import (
    API_PORT,
    WATCH_PORT,
    Binding,
    Credentials,
    DeleteOptions,
    Eviction,
    Request,
    Response,
    Status,
    WatchEvent,
    WatchMessage,
    WatchProbe,
    WatchStop,
    micro_timestamp,
    parse_timestamp,
)
from chaoskube.client.leaderelection import LeaseRecord, LockError
from chaoskube.client.workqueue import BucketRateLimiter
from chaoskube.sim.buggify import maybe_sleep
from chaoskube.sim.outcomes import Failed, Ok, Outcome, Unknown
from chaoskube.sim.process import Process

__all__ = [
    "AMBIGUOUS",
    "KUBELET_RATE",
    "KUBE_CONTROLLER_MANAGER_RATE",
    "KUBE_PROXY_RATE",
    "KUBE_SCHEDULER_RATE",
    "MAX_RETRY_AFTER_RETRIES",
    "REFUSED",
    "ApiClient",
    "ApiError",
    "ApiLeaseLock",
    "ObjectList",
    "WatchBroken",
    "WatchEnded",
    "WatchStream",
    "is_ambiguous",
    "is_refused",
    "leader_election_client",
    "lease_record_of",
    "lease_spec_of",
    "own_rate_limit",
    "wire_copy",
]

#: ``status.causes`` marker of a failure whose outcome is unknown (may have happened).
AMBIGUOUS = "ambiguous"
#: ``status.causes`` marker of the client-made 503 for a refused connection.
REFUSED = "connection-refused"
#: client-go ``rest.NewRequest``: ``maxRetries: 10`` Retry-After retries.
MAX_RETRY_AFTER_RETRIES = 10
#: ``with_retry.go`` ``retryAfterResponse``: a retryable error waits ``Retry-After: 1``.
NETWORK_RETRY_AFTER_S = 1.0
#: Watch messages a stream buffers for a slow reader; past this the stream breaks.
WATCH_BUFFER_MESSAGES = 10_000
#: HTTP/2 health check (apimachinery ``util/net/http.go``): read idle 30 s, ping 15 s.
READ_IDLE_TIMEOUT_S = 30.0
PING_TIMEOUT_S = 15.0
#: How long a stream stays silent before the client probes it (see the module docstring).
PROBE_EVERY_S = 5.0

#: Client-side rate limits (QPS, burst) of the components, their defaults:
#: kube-controller-manager ``--kube-api-qps`` 20 / ``--kube-api-burst`` 30, per controller;
KUBE_CONTROLLER_MANAGER_RATE = (20.0, 30)
#: KubeSchedulerConfiguration ``clientConnection`` qps 50 / burst 100;
KUBE_SCHEDULER_RATE = (50.0, 100)
#: KubeletConfiguration ``kubeAPIQPS`` 50 / ``kubeAPIBurst`` 100 (since 1.27, kubernetes#116121);
KUBELET_RATE = (50.0, 100)
#: KubeProxyConfiguration ``clientConnection`` qps 5 / burst 10.
KUBE_PROXY_RATE = (5.0, 10)

MUTATING_VERBS = ("create", "update", "patch", "delete")
IDEMPOTENT_READS = ("get", "list")
_ROUTER_KEY = "chaoskube.client.client/watch-router"
_COUNTERS_KEY = "chaoskube.client.client/counters"


#: The bucket of the running task's own clientset (:func:`own_rate_limit`), if it has one.
_TASK_BUCKET: contextvars.ContextVar[BucketRateLimiter | None] = contextvars.ContextVar("chaoskube-client-rate", default=None)


def own_rate_limit(qps: float, burst: int) -> None:
    """From now on, the calling task's requests (and those of the tasks it starts later)
    take their tokens from a bucket of their own, whichever client sends them: one
    controller's clientset in kube-controller-manager. Trio starts a task with a copy of
    its parent's context, so the bucket is the task's and its children's only."""
    _TASK_BUCKET.set(BucketRateLimiter(qps, burst))


# =========================================================================== results
def wire_copy(obj: Any) -> Any:
    """What the other end of a wire would decode: a copy sharing nothing with ``obj``."""
    if obj is None:
        return None
    if isinstance(obj, msgspec.Struct):
        return msgspec.json.decode(msgspec.json.encode(obj), type=type(obj))
    return deep_copy(obj)


def is_ambiguous(response: Response) -> bool:
    """The request failed and may nevertheless have been applied (module docstring)."""
    return not response.ok and response.status is not None and AMBIGUOUS in response.status.causes


def is_refused(response: Response) -> bool:
    """Every attempt was refused: the request definitely did not happen."""
    return not response.ok and response.status is not None and REFUSED in response.status.causes


def _mark_ambiguous(response: Response) -> Response:
    assert response.status is not None
    if AMBIGUOUS in response.status.causes:
        return response
    status = replace(response.status, causes=response.status.causes + (AMBIGUOUS,))
    return replace(response, status=status)


class ApiError(Exception):
    """A request that did not succeed: ``status`` is the (possibly client-made) Status;
    ``ambiguous`` is True when it may nevertheless have been applied."""

    def __init__(self, status: Status, ambiguous: bool = False, *, server: str = "") -> None:
        super().__init__(f"{status.code} {status.reason}: {status.message}")
        self.status = status
        self.ambiguous = ambiguous
        self.server = server

    @classmethod
    def of(cls, response: Response) -> ApiError:
        assert response.status is not None, "a failure carries a Status"
        return cls(response.status, is_ambiguous(response), server=response.server)

    @property
    def code(self) -> int:
        return self.status.code

    @property
    def reason(self) -> str:
        return self.status.reason

    @property
    def message(self) -> str:
        return self.status.message

    @property
    def refused(self) -> bool:
        return REFUSED in self.status.causes

    @property
    def retry_after_seconds(self) -> int:
        return self.status.retry_after_seconds


class ObjectList(NamedTuple):
    """A list answer: the items and the list's resourceVersion (``metav1.ListMeta``)."""

    items: tuple[Object, ...]
    resource_version: str


def _refused(server: str) -> Response:
    message = f"dial tcp {server}:6443: connect: connection refused"
    return Response(503, status=Status(503, "ServiceUnavailable", message, causes=(REFUSED,)), server=server)


def _timed_out(server: str, request: Request, timeout_s: float) -> Response:
    message = (
        f"{request.verb} {request.resource}: no answer from {server} within {timeout_s:g}s; "
        "the request may or may not have been applied"
    )
    return Response(504, status=Status(504, "Timeout", message, causes=(AMBIGUOUS,)), server=server)


@dataclass(slots=True)
class _Attempts:
    """What one ``request`` has seen so far, for the retry decision and the journal."""

    tried: set[str]
    request_id: str = ""
    last: Response | None = None
    in_flight: str = ""  # the server of the attempt under way, if any
    retry: bool = False
    wait_s: float = 0.0
    retry_after_retries: int = 0
    ambiguous: bool = False


# =========================================================================== the client
class ApiClient:
    """A client of the API servers ``servers`` (process names), acting for ``process``
    with ``credentials``. See the module docstring for the retry and journal contract."""

    def __init__(
        self,
        process: Process,
        servers: tuple[str, ...] | list[str],
        credentials: Credentials,
        *,
        timeout_s: float = 10.0,
        attempts: int = 5,
        deadline_s: float | None = None,
        name: str | None = None,
        user_agent: str = "",
        probe_every_s: float = PROBE_EVERY_S,
        read_idle_s: float = READ_IDLE_TIMEOUT_S,
        ping_s: float = PING_TIMEOUT_S,
        pinned_to: int | None = None,
        rate: tuple[float, int] | None = None,
    ) -> None:
        """``rate`` (QPS, burst) throttles the client's requests (module docstring); None,
        the default, does not. ``pinned_to`` (an index into ``servers``) pins the client to that server, as a
        kubelet's connection sits on one API server (see :meth:`rotate`); None (the
        default) starts at a seeded random server and moves on after any network
        failure."""
        assert servers, "a client needs at least one API server"
        assert timeout_s > 0 and attempts >= 1, "a request needs a deadline and an attempt"
        self.process = process
        self.servers = tuple(servers)
        self.credentials = credentials
        self.timeout_s = timeout_s
        self.attempts = attempts
        # Long enough for every attempt to time out; Retry-After waits count against it.
        self.deadline_s = deadline_s if deadline_s is not None else timeout_s * attempts
        assert self.deadline_s > 0
        self.name = name or process.name
        self.user_agent = user_agent
        self.field_manager = field_manager_of(self.name)
        self.probe_every_s = probe_every_s
        self.read_idle_s = read_idle_s
        self.ping_s = ping_s
        self.pinned = pinned_to is not None
        if pinned_to is None:
            self._server_index = process.random("api-endpoint").randrange(len(self.servers))
        else:
            assert 0 <= pinned_to < len(self.servers), pinned_to
            self._server_index = pinned_to
        self._sequence = 0
        self._op_ids = 0
        self._bucket = BucketRateLimiter(*rate) if rate is not None else None
        self._statistics = {"requests": 0, "attempts": 0, "refused": 0, "timeouts": 0, "retry_after": 0, "watches": 0, "throttled": 0}

    # -- servers and ids ----------------------------------------------------------------
    @property
    def server(self) -> str:
        return self.servers[self._server_index % len(self.servers)]

    def rotate(self, *, refused: bool = False) -> None:
        """Use the next server from now on (round robin from a seeded random start).

        A pinned client moves only when its connection was ``refused`` (the server is
        down): a kubelet's kubeconfig names one address -- one API server, or the load
        balancer in front of them, whose long-lived HTTP/2 connection stays on the server
        it reached ("To prevent HTTP/2 clients from getting stuck on a single apiserver",
        kube-apiserver ``--goaway-chance``, off by default:
        https://kubernetes.io/docs/reference/command-line-tools-reference/kube-apiserver/)
        -- and a new connection goes to a server that answers. A timeout, a silent or
        broken watch, leave it where it is."""
        if self.pinned and not refused:
            return
        self._server_index += 1

    def _count(self, what: str) -> int:
        """The next number of ``what`` for this client name in this process incarnation:
        shared by every ApiClient of that name (leader election builds a new client per
        campaign), so request and operation ids never repeat within an incarnation."""
        counters = self.process.memory.setdefault(_COUNTERS_KEY, {})
        number = counters.get((self.name, what), 0) + 1
        counters[(self.name, what)] = number
        return number

    def next_id(self) -> str:
        self._sequence = self._count("request")
        return f"{self.name}/{self.process.incarnation}/{self._sequence}"

    def statistics(self) -> dict[str, int]:
        return dict(self._statistics)

    async def _throttle(self) -> None:
        """``tryThrottle``: take a token from the task's own bucket, else the client's, and
        wait until it is due."""
        bucket = _TASK_BUCKET.get()
        if bucket is None:
            bucket = self._bucket
        if bucket is None:
            return
        delay = bucket.when(None, self.process.now())
        if delay > 0:
            self._statistics["throttled"] += 1
            await self.process.sleep(delay)

    # -- one request, with retries ------------------------------------------------------
    async def request(self, request: Request) -> Response:
        """Send ``request`` with the retry rules of the module docstring; never raises for
        API or network errors. Mutating requests are journaled."""
        assert request.verb != "watch", "open watches with ApiClient.watch"
        self._statistics["requests"] += 1
        journaled = request.verb in MUTATING_VERBS and not request.dry_run
        op_id = self._journal_invoke(request) if journaled else ""
        started = self.process.world.now
        state = _Attempts(tried=set())
        response = await self._with_retries(request, state)
        if journaled:
            self._journal_end(op_id, request, response, state.request_id)
        elif request.verb in IDEMPOTENT_READS:
            self._journal_read(request, response, started)
        return response

    async def _with_retries(self, request: Request, state: _Attempts) -> Response:
        response: Response | None = None
        with self.process.move_on_after(self.deadline_s):
            response = await self._attempts_loop(request, state)
        if response is None:  # the overall deadline passed
            response = self._past_deadline(request, state)
        if state.ambiguous and not response.ok:
            response = _mark_ambiguous(response)
        return response

    async def _attempts_loop(self, request: Request, state: _Attempts) -> Response:
        """Attempts until one needs no retry (``state.retry`` false), ``attempts`` were
        made, or more than MAX_RETRY_AFTER_RETRIES Retry-After answers were retried; the
        last answer stands. Between attempts, a sleep of ``state.wait_s`` on the process's
        clock. (This is what a tenacity ``AsyncRetrying`` with ``stop_after_attempt`` and
        ``retry_if_result`` did, decision for decision; written out because every API
        request went through it and tenacity's per-call machinery cost ~3 % of a run.)"""
        attempt = 0
        while True:
            attempt += 1
            response = await self._attempt(request, state)
            if not state.retry or attempt >= self.attempts or state.retry_after_retries > MAX_RETRY_AFTER_RETRIES:
                return response
            await self.process.sleep(state.wait_s)

    def _past_deadline(self, request: Request, state: _Attempts) -> Response:
        if state.in_flight:  # the deadline cut a hung attempt short: it timed out too
            self._statistics["timeouts"] += 1
        if state.in_flight or state.last is None:
            state.ambiguous = True
            return _timed_out(state.in_flight or self.server, request, self.deadline_s)
        return state.last

    async def _attempt(self, request: Request, state: _Attempts) -> Response:
        await self._throttle()
        server = self.server
        sent = replace(request, id=self.next_id())
        state.request_id = sent.id
        state.tried.add(server)
        state.in_flight = server
        self._statistics["attempts"] += 1
        outcome = await self.process.call(server, sent, port=API_PORT, timeout_s=self.timeout_s)
        state.in_flight = ""
        response, kind = self._response_of(outcome, server, sent)
        state.last = response
        self._decide(request, response, kind, state)
        return response

    def _response_of(self, outcome: Outcome, server: str, request: Request) -> tuple[Response, str]:
        """The answer of one attempt and its kind: "answer", "refused" or "timeout"."""
        if isinstance(outcome, Ok):
            assert isinstance(outcome.value, Response), f"{server} answered {outcome.value!r}"
            return outcome.value, "answer"
        if isinstance(outcome, Failed):
            if isinstance(outcome.value, Response):  # the server answered with ok=False
                return outcome.value, "answer"
            self._statistics["refused"] += 1
            return _refused(server), "refused"
        assert isinstance(outcome, Unknown)
        self._statistics["timeouts"] += 1
        return _timed_out(server, request, self.timeout_s), "timeout"

    def _decide(self, request: Request, response: Response, kind: str, state: _Attempts) -> None:
        """Whether and when to retry (module docstring); moves to the next server after a
        network failure."""
        state.retry, state.wait_s = False, 0.0
        if response.ok:
            return
        if kind == "timeout" or response.code in (500, 504):
            state.ambiguous = True
        if kind == "refused" or (kind == "timeout" and request.verb in IDEMPOTENT_READS):
            self.rotate(refused=kind == "refused")
            state.retry = True
            state.wait_s = NETWORK_RETRY_AFTER_S if self.server in state.tried else 0.0
            return
        status = response.status
        assert status is not None
        if kind == "answer" and (response.code == 429 or response.code >= 500) and status.retry_after_seconds > 0:
            state.retry_after_retries += 1
            self._statistics["retry_after"] += 1
            state.retry = True
            state.wait_s = float(status.retry_after_seconds)

    # -- journal ------------------------------------------------------------------------
    def _journal_invoke(self, request: Request) -> str:
        self._op_ids += 1
        op_id = f"{self.process.incarnation}.{self._count('op')}"
        fields = op_fields(self.name, request)
        fields.update(preconditions(request))
        self.process.world.record("api-op", phase="invoke", op_id=op_id, **fields)
        return op_id

    def _journal_read(self, request: Request, response: Response, started: float) -> None:
        """One ``api-read`` event for a get or list (module docstring, "Journal")."""
        phase = "ok" if response.ok else "info" if is_ambiguous(response) else "fail"
        self.process.world.record("api-read", **read_fields(self.name, request, response, started, phase))

    def _journal_end(self, op_id: str, request: Request, response: Response, request_id: str) -> None:
        phase = "ok" if response.ok else "info" if is_ambiguous(response) else "fail"
        self.process.world.record("api-op", phase=phase, op_id=op_id, **_end_record(self.name, request, response, request_id))

    # -- typed helpers (raise ApiError) -------------------------------------------------
    def _request(self, verb: str, resource: str, **fields: Any) -> Request:
        if verb in ("create", "update", "patch"):
            fields.setdefault("field_manager", self.field_manager)
        return Request(verb=verb, resource=resource, credentials=self.credentials, **fields)

    async def _do(self, request: Request) -> Response:
        response = await self.request(request)
        if not response.ok:
            raise ApiError.of(response)
        return response

    async def get(self, resource: str, namespace: str, name: str, *, resource_version: str = "") -> Object:
        response = await self._do(self._request("get", resource, namespace=namespace, name=name, resource_version=resource_version))
        assert response.object is not None, "a get answers an object"
        return response.object

    async def list(
        self,
        resource: str,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ObjectList:
        request = self._request(
            "list", resource, namespace=namespace, label_selector=label_selector, field_selector=field_selector,
            resource_version=resource_version, resource_version_match=resource_version_match,
        )
        response = await self._do(request)
        return ObjectList(response.items, response.resource_version)

    async def create(self, obj: Object, *, dry_run: bool = False, version: str = "") -> Object:
        """POST ``obj`` to its collection. An empty namespace of a namespaced kind means
        "default", as kubectl fills it in. ``version``: the API version to address, as a
        URL names it (a custom resource is served only at its CRD's served versions); ""
        addresses the kind at the version the server serves in-process clients."""
        request = self._request("create", obj.RESOURCE, namespace=_namespace_of(obj), body=obj, dry_run=dry_run, version=version)
        return (await self._do(request)).object

    async def update(self, obj: Object, *, dry_run: bool = False) -> Object:
        """PUT ``obj``; its ``metadata.resourceVersion`` is the precondition (409 Conflict)."""
        return await self._put(obj, "", dry_run)

    async def update_status(self, obj: Object, *, dry_run: bool = False) -> Object:
        """PUT ``obj`` to its ``status`` subresource."""
        if self.process.world.buggify.enabled:  # BUGGIFY: a controller's sync writes its status later
            await maybe_sleep(self.process, "controller.status-write")
        return await self._put(obj, "status", dry_run)

    async def _put(self, obj: Object, subresource: str, dry_run: bool) -> Object:
        assert obj.metadata.name, "an update names its object"
        request = self._request(
            "update", obj.RESOURCE, namespace=_namespace_of(obj), name=obj.metadata.name, subresource=subresource, body=obj, dry_run=dry_run
        )
        return (await self._do(request)).object

    async def patch(
        self, resource: str, namespace: str, name: str, patch: Any, *, patch_type: str = "merge", subresource: str = ""
    ) -> Object:
        """PATCH with a JSON merge patch (``patch_type="merge"``) or a JSON patch ("json")."""
        request = self._request("patch", resource, namespace=namespace, name=name, subresource=subresource, body=patch, patch_type=patch_type)
        return (await self._do(request)).object

    async def delete(self, resource: str, namespace: str, name: str, *, options: DeleteOptions | None = None) -> Object | None:
        """DELETE; returns the object as the server last had it (with a deletion
        timestamp while finalizers or a grace period hold it), if the server sends it."""
        request = self._request("delete", resource, namespace=namespace, name=name, delete_options=options)
        return (await self._do(request)).object

    async def evict(self, namespace: str, name: str, *, delete_options: DeleteOptions | None = None) -> None:
        """POST an ``policy/v1`` Eviction to ``pods/<name>/eviction`` (429 while a
        PodDisruptionBudget allows no disruption)."""
        body = Eviction(name=name, namespace=namespace, delete_options=delete_options)
        await self._do(self._request("create", "pods", namespace=namespace, name=name, subresource="eviction", body=body))

    async def bind(self, namespace: str, name: str, node: str) -> None:
        """POST a Binding to ``pods/<name>/binding`` (the scheduler's write)."""
        body = Binding(name=name, namespace=namespace, target_node=node)
        await self._do(self._request("create", "pods", namespace=namespace, name=name, subresource="binding", body=body))

    # -- watches ------------------------------------------------------------------------
    async def watch(
        self,
        resource: str,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        allow_watch_bookmarks: bool = False,
        timeout_seconds: int | None = None,
    ) -> WatchStream:
        """Open a watch on the current server; one attempt, no retry (the caller, usually a
        Reflector, decides). Raises :class:`ApiError` (``refused`` for a refused
        connection; 504 for no answer, after asking the server to stop the stream it may
        have opened). Call :meth:`WatchStream.stop` when done."""
        await self._throttle()
        router = _router(self.process)
        server = self.server
        watch_id = f"{self.name}/{self.process.incarnation}/watch/{router.next_number()}"
        request = self._request(
            "watch", resource, namespace=namespace, label_selector=label_selector, field_selector=field_selector,
            resource_version=resource_version, allow_watch_bookmarks=allow_watch_bookmarks,
            timeout_seconds=timeout_seconds, watch_id=watch_id, id=self.next_id(),
        )
        stream = WatchStream(self, request, server)
        router.streams[watch_id] = stream  # before the call: events may follow the answer at once
        self._statistics["watches"] += 1
        opened = False
        try:
            outcome = await self.process.call(server, request, port=API_PORT, timeout_s=self.timeout_s)
            response, kind = self._response_of(outcome, server, request)
            if not response.ok:
                if kind != "answer":
                    self.rotate(refused=kind == "refused")
                raise ApiError(response.status, ambiguous=False, server=server)  # type: ignore[arg-type]
            opened = True
            return stream
        finally:
            if not opened:
                stream.stop()


def _end_record(client: str, request: Request, response: Response, request_id: str) -> dict[str, Any]:
    """The fields of an ``api-op`` ok / fail / info (module docstring, "Journal"), in the
    order the journal has always had them."""
    fields = op_fields(client, request)
    answered = end_fields(response)
    name = answered.pop("answered_name", "")
    fields.update(code=answered.pop("code"), reason=answered.pop("reason"), request=request_id, server=response.server)
    fields.update(answered)
    if not fields["name"] and name:
        fields["name"] = name
    return fields


def _namespace_of(obj: Object) -> str:
    if not obj.NAMESPACED:
        return ""
    return obj.metadata.namespace or "default"


# =========================================================================== watch streams
class WatchEnded(Exception):
    """The server closed the stream normally (its timeout, a cache reset, shutdown)."""


class WatchBroken(Exception):
    """The stream is unusable: a lost message, a full buffer, or a failed probe."""


class WatchStream:
    """One open watch. :meth:`next` returns the next batch of events in order; it raises
    :class:`WatchEnded` after the server closed the stream and :class:`WatchBroken` when
    the stream broke (module docstring). Buffer bound: :data:`WATCH_BUFFER_MESSAGES`; at
    the bound the stream breaks (as a server drops a watcher that cannot keep up)."""

    def __init__(self, client: ApiClient, request: Request, server: str) -> None:
        self.client = client
        self.request = request
        self.server = server
        self.watch_id = request.watch_id
        self.events_received = 0
        self._messages: deque[WatchMessage] = deque()
        self._expected = 1
        self._waiter: _Waiter | None = None  # the task parked in next(), if any
        self._broken = ""
        self._ended = False
        self._stopped = False
        self._last_heard = client.process.now()
        self._sent_at_last_probe = 0  # the server's ``sent`` at the previous probe

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _deliver(self, src: str, message: WatchMessage) -> None:
        """Called at delivery (from the world's scheduler): never blocks."""
        if self._stopped or self._broken or src != self.server:
            return
        if message.sequence != self._expected:
            self._break(f"lost watch message {self._expected} (got {message.sequence})")
            return
        if len(self._messages) >= WATCH_BUFFER_MESSAGES:
            self._break("watch buffer full")
            return
        self._expected += 1
        self._messages.append(message)
        self._last_heard = self.client.process.now()
        self._wake(True)

    def _break(self, reason: str) -> None:
        self._broken = reason
        self._wake(True)

    def _wake(self, news: bool) -> None:
        """Wake the task parked in :meth:`next`: with ``news`` (a message or a break),
        or without (``probe_every_s`` passed first)."""
        waiter = self._waiter
        if waiter is not None and waiter.alive:
            waiter.alive = False
            self._waiter = None
            trio.lowlevel.reschedule(waiter.task, outcome.Value(news))

    def _silence(self, waiter: _Waiter) -> None:
        if waiter is self._waiter:
            self._wake(False)

    async def _wait_for_news(self, process: Process) -> bool:
        """Park until a message or a break (True) or ``probe_every_s`` of the process's
        clock (False). The same wake-ups, at the same instants, as waiting on a
        ``trio.Event`` inside ``process.move_on_after(probe_every_s)`` (the timer is one
        entry on the world's heap, held while the process is paused), without a cancel
        scope and an Event per wait: one per watch message, the commonest wait of a run."""
        waiter = self._waiter = _Waiter(trio.lowlevel.current_task())
        process.call_later(self.client.probe_every_s, self._silence, waiter)

        def abort(_: Any) -> trio.lowlevel.Abort:
            waiter.alive = False
            if self._waiter is waiter:
                self._waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        return await trio.lowlevel.wait_task_rescheduled(abort)

    async def next(self) -> tuple[WatchEvent, ...]:
        """The events of the next message (possibly none). Raises WatchEnded / WatchBroken."""
        process = self.client.process
        while True:
            if self._messages:
                message = self._messages.popleft()
                self._ended = self._ended or message.closed
                self.events_received += len(message.events)
                return message.events
            if self._ended:
                raise WatchEnded(f"{self.server} closed watch {self.watch_id}")
            if self._broken:
                raise WatchBroken(self._broken)
            assert not self._stopped, "next() on a stopped stream"
            news = await self._wait_for_news(process)
            if not news and not self._messages and not self._broken:
                await self._probe()

    async def _probe(self) -> None:
        """The liveness check of the module docstring (HTTP/2 ping / TCP reset)."""
        client = self.client
        outcome = await client.process.call(self.server, WatchProbe(self.watch_id), port=API_PORT, timeout_s=client.probe_every_s)
        if isinstance(outcome, Ok):
            if isinstance(outcome.value, dict) and outcome.value.get("alive"):
                self._last_heard = client.process.now()
                if self._sent_at_last_probe >= self._expected and not self._messages:
                    self._break(f"lost watch message {self._expected} ({self.server} had sent {self._sent_at_last_probe} a probe ago)")
                self._sent_at_last_probe = int(outcome.value.get("sent", 0))
            elif not self._messages:
                self._break(f"{self.server} no longer has watch {self.watch_id}")
        elif isinstance(outcome, Failed):
            self._break(f"connection to {self.server} refused")
        elif client.process.now() - self._last_heard >= client.read_idle_s + client.ping_s:
            self._break(f"{self.server} silent for {client.read_idle_s + client.ping_s:g}s (HTTP/2 health check)")

    def stop(self) -> None:
        """Close the stream: forget it and tell the server (``WatchStop``, fire and
        forget, as an HTTP/2 RST_STREAM). Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        router = self.client.process.memory.get(_ROUTER_KEY)
        if router is not None and router.streams.get(self.watch_id) is self:
            del router.streams[self.watch_id]
        if self.client.process.alive:
            self.client.process.send(self.server, WatchStop(self.watch_id), port=API_PORT, duplicable=False)


@dataclass(slots=True, eq=False)
class _Waiter:
    task: Any  # trio.lowlevel.Task
    alive: bool = True


class _WatchRouter:
    """Dispatches the ``WATCH_PORT`` messages of one process incarnation to their streams;
    messages of streams it does not know (stopped, or of an older incarnation) are dropped."""

    def __init__(self, process: Process) -> None:
        self.incarnation = process.incarnation
        self.streams: dict[str, WatchStream] = {}
        self._numbers = 0
        process.on_message(WATCH_PORT, self._deliver)

    def next_number(self) -> int:
        self._numbers += 1
        return self._numbers

    def _deliver(self, message: Any) -> None:
        body = message.body
        if isinstance(body, WatchMessage):
            stream = self.streams.get(body.watch_id)
            if stream is not None:
                stream._deliver(message.src, body)


def _router(process: Process) -> _WatchRouter:
    """The process's router, made on first use in each incarnation (``process.memory`` is
    lost with the process, as its handlers are)."""
    router = process.memory.get(_ROUTER_KEY)
    if router is None:
        router = process.memory[_ROUTER_KEY] = _WatchRouter(process)
    assert router.incarnation == process.incarnation
    return router


# =========================================================================== Lease lock
def lease_spec_of(record: LeaseRecord) -> LeaseSpec:
    """client-go ``LeaderElectionRecordToLeaseSpec``: times as ``MicroTime``."""
    return LeaseSpec(
        holder_identity=record.holder_identity,
        lease_duration_seconds=record.lease_duration_seconds,
        acquire_time=micro_timestamp(record.acquire_time) if record.acquire_time is not None else None,
        renew_time=micro_timestamp(record.renew_time) if record.renew_time is not None else None,
        lease_transitions=record.lease_transitions,
    )


def lease_record_of(lease: Lease) -> LeaseRecord:
    """client-go ``LeaseSpecToLeaderElectionRecord``: absent fields read as zero values;
    times become virtual seconds (informational only: never used to judge expiry)."""
    spec = lease.spec
    return LeaseRecord(
        holder_identity=spec.holder_identity or "",
        lease_duration_seconds=spec.lease_duration_seconds or 0,
        acquire_time=parse_timestamp(spec.acquire_time) if spec.acquire_time else None,
        renew_time=parse_timestamp(spec.renew_time) if spec.renew_time else None,
        lease_transitions=spec.lease_transitions or 0,
    )


class ApiLeaseLock:
    """:class:`~chaoskube.client.leaderelection.LeaseLock` over a ``coordination.k8s.io/v1``
    Lease (client-go ``resourcelock/leaselock.go``). ``get`` answers (record, resourceVersion)
    or (None, "") on 404; ``create`` / ``update`` answer True, or False on 409
    (AlreadyExists / Conflict); any other failure (timeout, refused, 5xx, 403) raises
    :class:`~chaoskube.client.leaderelection.LockError`. ``update`` writes the last Lease read
    with the new spec, so its labels and annotations survive, as ``LeaseLock.Update`` does.
    ``name`` is ``<namespace>/<name>`` (``LeaseLock.Describe``)."""

    def __init__(self, client: ApiClient, namespace: str, name: str) -> None:
        assert namespace and name, "a Lease lock names its Lease"
        self.client = client
        self.namespace = namespace
        self.lease_name = name
        self.name = f"{namespace}/{name}"
        self._lease: Lease | None = None

    async def get(self) -> tuple[LeaseRecord | None, Any]:
        try:
            lease = await self.client.get("leases", self.namespace, self.lease_name)
        except ApiError as error:
            if error.code == 404:
                self._lease = None
                return None, ""
            raise LockError(f"get {self.name}: {error}") from error
        assert isinstance(lease, Lease)
        self._lease = lease
        return lease_record_of(lease), lease.metadata.resource_version

    async def create(self, record: LeaseRecord) -> bool:
        lease = Lease(metadata=ObjectMeta(name=self.lease_name, namespace=self.namespace), spec=lease_spec_of(record))
        return await self._write(self.client.create, lease, "create")

    async def update(self, record: LeaseRecord, version: Any) -> bool:
        base = self._lease or Lease(metadata=ObjectMeta(name=self.lease_name, namespace=self.namespace))
        metadata = msgspec.structs.replace(base.metadata, resource_version=str(version))
        lease = msgspec.structs.replace(base, metadata=metadata, spec=lease_spec_of(record))
        return await self._write(self.client.update, lease, "update")

    async def _write(self, write: Any, lease: Lease, verb: str) -> bool:
        try:
            written = await write(lease)
        except ApiError as error:
            if error.code == 409 and not error.ambiguous:
                return False
            raise LockError(f"{verb} {self.name}: {error}") from error
        self._lease = written
        return True


#: The components' clients by the last part of their name: their user agents begin with the
#: binary's name (``rest.DefaultKubernetesUserAgent``: ``os.Args[0]``), which is what the API
#: server keeps as the field manager of their writes (``managerOrUserAgent``).
_COMPONENT_AGENTS = {"controllers": "kube-controller-manager", "scheduler": "kube-scheduler", "kubelet": "kubelet", "kube-proxy": "kube-proxy"}


def field_manager_of(client_name: str) -> str:
    """The field manager a client's writes carry: its component's binary name
    (``node-1/kubelet`` -> ``kubelet``; ``kube-controller-manager-2/leader-election`` ->
    ``kube-controller-manager``), else the client's name up to its first "/"."""
    process, _, component = client_name.partition("/")
    if component.rpartition("/")[2] in _COMPONENT_AGENTS:
        return _COMPONENT_AGENTS[component.rpartition("/")[2]]
    return re.sub(r"-\d+$", "", process)


def leader_election_client(
    process: Process, servers: tuple[str, ...] | list[str], credentials: Credentials, *, renew_deadline_s: float = 10.0, name: str | None = None
) -> ApiClient:
    """The client ``resourcelock.NewFromKubeconfig`` builds: timeout ``max(1 s,
    renewDeadline / 2)`` for the whole request, "so a single hung request cannot force a
    leader loss"; user agent "leader-election"."""
    timeout_s = max(1.0, renew_deadline_s / 2)
    return ApiClient(
        process, servers, credentials, timeout_s=timeout_s, deadline_s=timeout_s,
        name=name or f"{process.name}/leader-election", user_agent="leader-election",
    )

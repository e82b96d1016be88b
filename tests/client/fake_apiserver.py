"""A small in-memory API server for the client and informer tests.

It speaks :mod:`chaoskube.api.protocol` like the real one: requests on ``API_PORT``
answered with a ``Response``; watch events pushed as numbered ``WatchMessage`` on
``WATCH_PORT``; ``WatchProbe`` answered ``{"alive": bool}``; ``WatchStop`` closes a
stream. Several server processes share one :class:`FakeStore` (the part etcd plays), so
killing one server loses its watch streams, not the objects.

What it does: get / list / watch / create / update (and ``status``) / patch (merge) /
delete, evictions (deletes the pod) and bindings (sets ``spec.nodeName``); integer
resourceVersions from one counter; optimistic concurrency on update (409 Conflict);
label selectors of the form ``k=v,k!=v``; field selectors on ``metadata.name`` /
``metadata.namespace`` / ``spec.nodeName``; watch from a resourceVersion replays history
newer than it, or answers 410 Expired when it is older than the compaction point.

Faults to inject: ``fail_next(verb, status, count)`` (e.g. 429 with Retry-After, 410 for
lists), ``swallow_replies(count)`` (the request is applied but no answer is sent: the
client times out), ``drop_watch_messages(count)`` (the next messages of streams are lost:
a sequence gap), ``forget_streams()`` (the server no longer knows its streams),
``expire_streams()`` / ``fail_streams(status)`` (an ERROR event, 410 Expired or
``status``, then close), ``close_streams()``
(a normal end), ``compact()`` (watches from older resourceVersions answer 410).

Not the real server: no authentication, admission, validation, defaulting or graceful
deletion; ``uid`` is ``uid-<resourceVersion at creation>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from chaoskube.api import protocol
from chaoskube.api.manifests import from_dict, to_dict
from chaoskube.api.patch import merge_patch
from chaoskube.api.protocol import (
    API_PORT,
    WATCH_PORT,
    Binding,
    Eviction,
    Request,
    Response,
    Status,
    WatchEvent,
    WatchMessage,
    WatchProbe,
    WatchStop,
)
from chaoskube.sim import Process, World

HISTORY_LIMIT = 10_000


def copy(obj: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(obj), type=type(obj))


def selector_matches(selector: str, labels: dict[str, str]) -> bool:
    for term in filter(None, (part.strip() for part in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        else:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
    return True


def field_matches(selector: str, obj: Any) -> bool:
    values = {
        "metadata.name": obj.metadata.name,
        "metadata.namespace": obj.metadata.namespace,
        "spec.nodeName": getattr(getattr(obj, "spec", None), "node_name", ""),
    }
    for term in filter(None, (part.strip() for part in selector.split(","))):
        negate = "!=" in term
        key, value = term.split("!=" if negate else "=", 1)
        if (values.get(key) == value) == negate:
            return False
    return True


@dataclass
class Stream:
    client: str
    watch_id: str
    request: Request
    sequence: int = 0


@dataclass
class Fault:
    verb: str
    status: Status
    count: int
    resource: str = ""


@dataclass
class FakeStore:
    """Objects and watch streams shared by every fake server process."""

    objects: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    revision: int = 0
    compacted: int = 0
    history: list[tuple[int, str, Any]] = field(default_factory=list)
    streams: dict[str, dict[str, Stream]] = field(default_factory=dict)  # server -> id -> stream
    servers: dict[str, Process] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    swallow: int = 0
    drop_messages: int = 0
    requests: list[tuple[str, Request]] = field(default_factory=list)
    probes: int = 0

    # -- processes ----------------------------------------------------------------------
    def spawn(self, world: World, *names: str) -> list[Process]:
        return [world.spawn(name, self.main, role="kube-apiserver") for name in names]

    async def main(self, process: Process) -> None:
        self.servers[process.name] = process
        self.streams[process.name] = {}  # a (re)started server has no streams
        process.on_message(API_PORT, lambda message: self._handle(process, message))
        await trio.sleep_forever()

    # -- fault injection ----------------------------------------------------------------
    def fail_next(self, verb: str, status: Status, count: int = 1, resource: str = "") -> None:
        self.faults.append(Fault(verb, status, count, resource))

    def swallow_replies(self, count: int = 1) -> None:
        self.swallow += count

    def drop_watch_messages(self, count: int = 1) -> None:
        self.drop_messages += count

    def forget_streams(self) -> None:
        for streams in self.streams.values():
            streams.clear()

    def expire_streams(self) -> None:
        self.fail_streams(protocol.gone(f"too old resource version: 1 ({self.revision})"))

    def fail_streams(self, status: Status) -> None:
        """End every stream with an ERROR event carrying ``status``."""
        self._end_streams((WatchEvent("ERROR", status=status),))

    def close_streams(self) -> None:
        self._end_streams(())

    def compact(self) -> None:
        self.compacted = self.revision
        self.history = []

    def _end_streams(self, events: tuple[WatchEvent, ...]) -> None:
        for server in sorted(self.streams):
            streams = self.streams[server]
            for watch_id in sorted(streams):
                self._push(server, streams[watch_id], events, closed=True)
            streams.clear()

    def _take_fault(self, request: Request) -> Status | None:
        for fault in self.faults:
            if fault.count > 0 and fault.verb in (request.verb, "*") and fault.resource in ("", request.resource):
                fault.count -= 1
                return fault.status
        return None

    # -- objects ------------------------------------------------------------------------
    def put(self, obj: Any) -> Any:
        """Store ``obj`` directly (test set-up), as a create would; returns the stored copy."""
        return self._insert(obj, obj.metadata.namespace or ("default" if obj.NAMESPACED else ""))

    def get(self, resource: str, namespace: str, name: str) -> Any | None:
        return self.objects.get((resource, namespace, name))

    def modify(self, resource: str, namespace: str, name: str, change: Callable[[Any], None]) -> Any:
        """Change a stored object in place (test set-up), as an update would."""
        obj = self.objects[(resource, namespace, name)]
        change(obj)
        return self._emit("MODIFIED", self._bump(obj))

    def remove(self, resource: str, namespace: str, name: str) -> Any:
        obj = self.objects.pop((resource, namespace, name))
        return self._emit("DELETED", self._bump(obj))

    def _bump(self, obj: Any) -> Any:
        self.revision += 1
        obj.metadata.resource_version = str(self.revision)
        return obj

    def _insert(self, body: Any, namespace: str) -> Any:
        obj = copy(body)
        obj.metadata.namespace = namespace
        key = (obj.RESOURCE, namespace, obj.metadata.name)
        if key in self.objects:
            return protocol.already_exists(obj.RESOURCE, obj.metadata.name)
        self._bump(obj)
        obj.metadata.uid = f"uid-{self.revision}"
        obj.metadata.creation_timestamp = protocol.timestamp(0.0)
        self.objects[key] = obj
        return self._emit("ADDED", obj)

    def _emit(self, kind: str, obj: Any) -> Any:
        self.history.append((self.revision, kind, copy(obj)))
        del self.history[:-HISTORY_LIMIT]
        for server in sorted(self.streams):
            streams = self.streams[server]
            for watch_id in sorted(streams):
                stream = streams[watch_id]
                if self._selects(stream.request, obj):
                    self._push(server, stream, (WatchEvent(kind, copy(obj), obj.metadata.resource_version),))
        return obj

    def _selects(self, request: Request, obj: Any) -> bool:
        return (
            obj.RESOURCE == request.resource
            and request.namespace in ("", obj.metadata.namespace)
            and selector_matches(request.label_selector, obj.metadata.labels)
            and field_matches(request.field_selector, obj)
        )

    def _push(self, server: str, stream: Stream, events: tuple[WatchEvent, ...], closed: bool = False) -> None:
        process = self.servers.get(server)
        stream.sequence += 1
        if process is None or not process.running:
            return
        if self.drop_messages > 0 and not closed:
            self.drop_messages -= 1
            return
        message = WatchMessage(stream.watch_id, stream.sequence, events, closed)
        process.send(stream.client, message, port=WATCH_PORT, duplicable=False)

    # -- requests -----------------------------------------------------------------------
    def _handle(self, process: Process, message: Any) -> None:
        body = message.body
        if isinstance(body, WatchProbe):
            self.probes += 1
            stream = self.streams[process.name].get(body.watch_id)
            process.reply(message, {"alive": stream is not None, "sent": stream.sequence if stream is not None else 0})
            return
        if isinstance(body, WatchStop):
            self.streams[process.name].pop(body.watch_id, None)
            if message.call_id:
                process.reply(message, {"stopped": True})
            return
        assert isinstance(body, Request), body
        self.requests.append((process.name, body))
        response = self._answer(process, message.src, body)
        if self.swallow > 0:
            self.swallow -= 1
            return
        process.reply(message, replace_server(response, process.name))

    def _answer(self, process: Process, client: str, request: Request) -> Response:
        status = self._take_fault(request)
        if status is not None:
            return Response(status.code, status=status)
        if request.verb == "watch":
            return self._verb_watch(process, client, request)
        handler: Callable[[Request], Any] = getattr(self, f"_verb_{request.verb}")
        result = handler(request)
        if isinstance(result, Status):
            return Response(result.code, status=result)
        return result

    def _verb_get(self, request: Request) -> Any:
        obj = self.get(request.resource, request.namespace, request.name)
        if obj is None:
            return protocol.not_found(request.resource, request.name)
        return Response(200, object=copy(obj))

    def _verb_list(self, request: Request) -> Any:
        items = tuple(copy(self.objects[key]) for key in sorted(self.objects) if self._selects(request, self.objects[key]))
        return Response(200, items=items, resource_version=str(self.revision))

    def _verb_watch(self, process: Process, client: str, request: Request) -> Response:
        rv = request.resource_version
        if rv not in ("", "0") and int(rv) < self.compacted:
            status = protocol.gone(f"too old resource version: {rv} ({self.compacted})")
            return Response(410, status=status)
        stream = Stream(client, request.watch_id, request)
        self.streams[process.name][request.watch_id] = stream
        if rv not in ("", "0"):
            backlog = tuple(
                WatchEvent(kind, copy(obj), str(revision))
                for revision, kind, obj in self.history
                if revision > int(rv) and self._selects(request, obj)
            )
            if backlog:
                # after the answer: the reply leaves first on the same FIFO link
                process.call_later(0.0, lambda _: self._push(process.name, stream, backlog) if request.watch_id in self.streams[process.name] else None)
        if request.timeout_seconds:
            process.call_later(float(request.timeout_seconds), lambda _: self._time_out(process.name, request.watch_id))
        return Response(200)

    def _time_out(self, server: str, watch_id: str) -> None:
        stream = self.streams.get(server, {}).pop(watch_id, None)
        if stream is not None:
            self._push(server, stream, (), closed=True)

    def _verb_create(self, request: Request) -> Any:
        if request.subresource == "eviction":
            assert isinstance(request.body, Eviction)
            result = self._verb_delete(request)
            return result if isinstance(result, Status) else Response(201)
        if request.subresource == "binding":
            assert isinstance(request.body, Binding)
            pod = self.objects.get(("pods", request.namespace, request.name))
            if pod is None:
                return protocol.not_found("pods", request.name)
            pod.spec.node_name = request.body.target_node
            self._emit("MODIFIED", self._bump(pod))
            return Response(201)
        if request.dry_run:
            return Response(201, object=copy(request.body))
        result = self._insert(request.body, request.namespace)
        return result if isinstance(result, Status) else Response(201, object=copy(result))

    def _verb_update(self, request: Request) -> Any:
        key = (request.resource, request.namespace, request.name)
        stored = self.objects.get(key)
        if stored is None:
            return protocol.not_found(request.resource, request.name)
        body = request.body
        if body.metadata.resource_version and body.metadata.resource_version != stored.metadata.resource_version:
            return protocol.conflict(request.resource, request.name)
        obj = copy(body)
        if request.subresource == "status":
            obj = copy(stored)
            obj.status = copy(body.status)
        obj.metadata.namespace = request.namespace
        obj.metadata.uid = stored.metadata.uid
        obj.metadata.creation_timestamp = stored.metadata.creation_timestamp
        self.objects[key] = self._bump(obj)
        return Response(200, object=copy(self._emit("MODIFIED", obj)))

    def _verb_patch(self, request: Request) -> Any:
        key = (request.resource, request.namespace, request.name)
        stored = self.objects.get(key)
        if stored is None:
            return protocol.not_found(request.resource, request.name)
        obj = from_dict(merge_patch(to_dict(stored), request.body))
        self.objects[key] = self._bump(obj)
        return Response(200, object=copy(self._emit("MODIFIED", obj)))

    def _verb_delete(self, request: Request) -> Any:
        if (request.resource, request.namespace, request.name) not in self.objects:
            return protocol.not_found(request.resource, request.name)
        return Response(200, object=copy(self.remove(request.resource, request.namespace, request.name)))



def replace_server(response: Response, server: str) -> Response:
    return dataclasses.replace(response, server=server)


# =========================================================================== test harness
ADMIN = protocol.Credentials(token="admin-token")


def pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None, node: str = "") -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": namespace, "labels": labels or {}}
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def run_with_client(
    body: Callable[[World, FakeStore, Any], Any],
    *,
    seed: int = 1,
    servers: tuple[str, ...] = ("api-0", "api-1"),
    first_server: str | None = None,
    limit_s: float = 3600.0,
    **client_options: Any,
) -> tuple[World, FakeStore, Any]:
    """Run fake servers and one process "client" with an ApiClient; ``await body(world,
    store, client)`` runs in the client process. Returns (world, store, body's result)."""
    from chaoskube.client.client import ApiClient

    store = FakeStore()
    result: dict[str, Any] = {}
    done = trio.Event()

    async def client_main(process: Process) -> None:
        client = ApiClient(process, servers, ADMIN, **client_options)
        while first_server is not None and client.server != first_server:
            client.rotate()
        result["value"] = await body(process.world, store, client)
        done.set()

    async def main(world: World) -> None:
        store.spawn(world, *servers)
        world.spawn("client", client_main)
        with trio.move_on_after(limit_s):
            await done.wait()

    world = World(seed)
    world.run(main)
    assert "value" in result, "the scenario did not finish"
    return world, store, result["value"]

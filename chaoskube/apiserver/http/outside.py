"""An outside program, in process: HTTP/1.1 requests to the HTTPS front's request
handler over memory streams (no TLS, no sockets), in virtual time, from the simulated
process ``outside`` -- so a catalogue experiment reaches what only real clients reach:
paginated lists (``limit`` / ``continue``, a 410's fresh token followed), the three
patch kinds, and watches resumed from a resourceVersion.

The loop (:class:`OutsideClient`), every ``every_s`` until stopped, as kubectl and
client-go do: list the ConfigMaps of its namespace in pages of ``page_size``; patch its
ConfigMap with a JSON merge patch (RFC 7386) and a JSON patch (RFC 6902) and its
Deployment's pod template (0 replicas: no pods) with a strategic merge patch that adds or
deletes a sidecar container and an env var by name and sets the main container's args or
deletes one of them (``$deleteFromPrimitiveList``); and watch ConfigMaps for
``watch_s`` from the last resourceVersion it saw (after a 410: from a fresh list). Every
request goes to the next API server replica in turn; a refused or stalled one is skipped
(the front journals it). What it sent and got is the front's journal (``http-request``,
``api-op``, ``list-page``, ``api-patch``, ``watch-open`` / ``watch-recv``), judged by
``api-pagination``, ``api-patch`` and ``api-watch``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import h11
import trio
import trio.testing

from chaoskube.api.identity import ADMIN_TOKEN
from chaoskube.sim import Process, World

__all__ = ["OutsideClient", "OutsideOptions"]

NAMESPACE = "outside"


@dataclass(frozen=True)
class OutsideOptions:
    every_s: float = 2.0
    page_size: int = 2
    configmaps: int = 5
    watch_s: float = 3.0
    #: How long one request may take before the client gives up (kubectl's
    #: --request-timeout is unset by default; client-go's watch and list use the server's).
    request_timeout_s: float = 10.0


class OutsideClient:
    """See the module docstring. ``front``: an :class:`~chaoskube.apiserver.http.front.ApiFront`."""

    def __init__(self, world: World, front: Any, servers: Sequence[str], options: OutsideOptions | None = None) -> None:
        self.world = world
        self.front = front
        self.servers = list(servers)
        self.options = options or OutsideOptions()
        self.process: Process | None = None
        self._next = 0
        self._round = 0
        self._watch_from = ""
        self.statistics = {"requests": 0, "answered": 0, "pages": 0, "patches": 0, "watch_events": 0}

    # ------------------------------------------------------------------ HTTP
    def _server(self) -> str:
        server = self.servers[self._next % len(self.servers)]
        self._next += 1
        return server

    async def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json", *, watch_s: float = 0.0) -> tuple[int, Any]:
        """One request on a fresh connection; (status, decoded body), status 0 when no
        answer came in time. A watch (``watch_s``) reads events for that long and returns
        them as a list."""
        self.statistics["requests"] += 1
        server = self._server()
        client_stream, server_stream = trio.testing.memory_stream_pair()
        connection = h11.Connection(h11.CLIENT)
        payload = json.dumps(body).encode() if body is not None else b""
        headers = [("Host", "kubernetes"), ("Authorization", f"Bearer {ADMIN_TOKEN}"), ("Accept", "application/json"), ("User-Agent", "outside-client/1.0")]
        if body is not None:
            headers += [("Content-Type", content_type), ("Content-Length", str(len(payload)))]
        result: tuple[int, Any] = (0, None)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.front.serve_stream, server, server_stream)
            with trio.move_on_after(self.options.request_timeout_s + watch_s):
                try:
                    await client_stream.send_all(connection.send(h11.Request(method=method, target=path, headers=headers)))
                    if payload:
                        await client_stream.send_all(connection.send(h11.Data(data=payload)))
                    await client_stream.send_all(connection.send(h11.EndOfMessage()))
                    result = await self._response(client_stream, connection, watch_s)
                except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
                    result = (0, None)
            await client_stream.aclose()
            nursery.cancel_scope.cancel()
        if result[0]:
            self.statistics["answered"] += 1
        return result

    async def _response(self, stream: Any, connection: h11.Connection, watch_s: float) -> tuple[int, Any]:
        status = 0
        data = b""
        deadline = trio.current_time() + watch_s if watch_s else None
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                if deadline is not None and status == 200:
                    with trio.move_on_at(deadline):
                        chunk = await stream.receive_some(65536)
                        if not chunk:
                            break
                        connection.receive_data(chunk)
                        data += b""
                        continue
                    break  # the watch read long enough
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                connection.receive_data(chunk)
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                data += bytes(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
        if deadline is not None and status == 200:
            return status, [json.loads(line) for line in data.splitlines() if line.strip()]
        try:
            return status, json.loads(data) if data else None
        except ValueError:
            return status, None

    # ------------------------------------------------------------------ the loop
    async def setup(self) -> None:
        """Its namespace, ConfigMaps and a Deployment of 0 replicas with two containers."""
        await self.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        for index in range(self.options.configmaps):
            await self.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{index}"}, "data": {"n": "0"}})
        template = {"metadata": {"labels": {"app": "outside"}}, "spec": {"containers": [
            {"name": "main", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]}, {"name": "helper", "image": "busybox:1.36"}]}}
        await self.request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "patched"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "outside"}}, "template": template}})

    def start(self) -> None:
        """Spawn the process ``outside`` (the front's default client): setup, then rounds."""
        self.process = self.world.spawn("outside", self._main, role="outside")

    async def _main(self, process: Process) -> None:
        del process
        await self.setup()
        while True:
            await self.round()
            await self.world.sleep(self.options.every_s)

    async def round(self) -> None:
        """One round: a paginated list, three patches, a watch."""
        self._round += 1
        await self._paginate()
        await self._patch()
        await self._watch()

    async def _paginate(self) -> None:
        token = ""
        for _ in range(2 * self.options.configmaps + 2):
            query = f"?limit={self.options.page_size}" + (f"&continue={quote(token)}" if token else "")
            status, body = await self.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps{query}")
            self.statistics["pages"] += 1
            if status == 200 and isinstance(body, dict):
                metadata = body.get("metadata") or {}
                if not token and metadata.get("resourceVersion"):
                    self._watch_from = self._watch_from or metadata["resourceVersion"]
                token = metadata.get("continue") or ""
            elif status == 410 and isinstance(body, dict):
                token = (body.get("metadata") or {}).get("continue") or ""  # the fresh token
            else:
                return
            if not token:
                return

    async def _patch(self) -> None:
        n = self._round
        configmap = f"/api/v1/namespaces/{NAMESPACE}/configmaps/cm-{n % self.options.configmaps}"
        merge = {"metadata": {"labels": {"round": str(n), "previous": None}}, "data": {"n": str(n), "gone": None}}
        if n % 2:
            merge["data"]["extra"] = "x"
        await self.request("PATCH", configmap, merge, "application/merge-patch+json")
        await self.request("PATCH", configmap, [{"op": "add", "path": "/data/json", "value": str(n)}, {"op": "remove", "path": "/data/n"}], "application/json-patch+json")
        deployment = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/patched"
        if n % 2:
            containers = [{"name": "sidecar", "image": f"busybox:1.{n % 7}"}, {"name": "main", "env": [{"name": "B", "value": str(n)}], "args": ["--a", "--b", f"--n={n}"]}]
        else:
            containers = [{"name": "sidecar", "$patch": "delete"}, {"name": "main", "env": [{"name": "B", "$patch": "delete"}], "$deleteFromPrimitiveList/args": ["--b"]}]
        await self.request("PATCH", deployment, {"spec": {"template": {"spec": {"containers": containers}}}}, "application/strategic-merge-patch+json")
        self.statistics["patches"] += 3

    async def _watch(self) -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&allowWatchBookmarks=true"
        if self._watch_from:
            path += f"&resourceVersion={self._watch_from}"
        status, events = await self.request("GET", path, watch_s=self.options.watch_s)
        if status != 200 or not isinstance(events, list):
            return
        for event in events:
            if event.get("type") == "ERROR":
                self._watch_from = ""  # 410: list again (the next round's first page)
                return
            version = (event.get("object") or {}).get("metadata", {}).get("resourceVersion")
            if version:
                self._watch_from = version
                self.statistics["watch_events"] += 1

"""An etcd client for the simulation that records every operation for the checkers.

Each operation is journaled as ``client-op`` events: ``invoke`` when it starts, then
exactly one of ``ok``, ``fail`` (it definitely did not happen) or ``info`` (unknown: it may
have happened), with virtual times. ``chaoskube.checkers.history.from_client_records``
turns them into the linearizability checker's history.

Retries (tenacity, sleeping on the process's clock) happen only where they are safe: a
request that definitely did not happen (connection refused, "no leader") is retried on
the next endpoint, whatever it is; a request whose outcome is unknown (a timeout, an
ambiguous "request timed out") is retried only if it is a read. After ``attempts`` the
last outcome stands. tenacity's ``stop_after_delay`` reads the wall clock, so the loop is
bounded by attempts instead (shared/FACTS.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt, wait_exponential

from chaoskube.etcd.requests import ERROR_REQUEST_TOO_LARGE, Compare, DeleteRangeRequest, KeyValue, PutRequest, RangeRequest, TxnRequest
from chaoskube.etcd.server import (
    CLIENT_PORT,
    WATCH_PORT,
    ClientReply,
    ClientRequest,
    WatchCreate,
    WatchEvents,
    WatchProgress,
)
from chaoskube.sim import Failed, Ok, Process, Unknown


@dataclass(frozen=True, slots=True)
class Result:
    """How one client call ended: ``status`` is "ok", "fail" or "info"."""

    status: str
    reply: ClientReply | None = None
    reason: str = ""
    request_id: str = ""  # the id of the last attempt (the proposal id of a write)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class OperationLog:
    """One client's register operations as ``client-op`` journal events, in the format
    ``chaoskube.checkers.history.from_client_records`` reads: ``invoke`` (``f``, ``key``,
    ``value``), then exactly one completion — ``ok`` with its ``output``, ``fail`` (it
    definitely did not happen) or ``info`` (it may have happened), with a ``reason`` when
    there is one. Extra fields of a completion (the simulated client's ``request`` id, real
    mode's ``revision`` and ``member``) are written when set (not None, not empty).

    Shared by this module's :class:`EtcdClient` (``record`` = ``World.record``) and real
    mode's gateway client (``record`` = its real-time recorder), so the two histories are
    the same shape and the same checkers read both."""

    __slots__ = ("record", "client", "_op_ids")

    def __init__(self, record: Callable[..., None], client: str) -> None:
        self.record = record
        self.client = client
        self._op_ids = 0

    def invoke(self, f: str, key: str, value: Any, **extra: Any) -> int:
        """Journal the start of an operation; returns its id (1, 2, ... per client).
        Extra fields (a serializable read's ``consistency``) are written when set."""
        self._op_ids += 1
        fields = {name: given for name, given in extra.items() if given is not None and given != ""}
        self.record("client-op", phase="invoke", client=self.client, op_id=self._op_ids, f=f, key=key, value=value, **fields)
        return self._op_ids

    def complete(self, phase: str, op_id: int, f: str, key: str, value: Any, output: Any = None, *, reason: str = "", **extra: Any) -> None:
        """Journal how operation ``op_id`` ended: ``phase`` is "ok", "fail" or "info"."""
        assert phase in ("ok", "fail", "info"), phase
        assert 0 < op_id <= self._op_ids, op_id
        fields: dict[str, Any] = {"phase": phase, "client": self.client, "op_id": op_id, "f": f, "key": key, "value": value, "output": output}
        if reason:
            fields["reason"] = reason
        for name, given in extra.items():
            if given is not None and given != "":
                fields[name] = given
        self.record("client-op", **fields)


class EtcdClient:
    def __init__(
        self,
        process: Process,
        endpoints: list[str],
        *,
        timeout_s: float = 2.0,
        attempts: int = 3,
        name: str | None = None,
    ) -> None:
        assert endpoints, "a client needs at least one endpoint"
        self.process = process
        self.endpoints = list(endpoints)
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.name = name or process.name
        self._endpoint = process.random("endpoint").randrange(len(self.endpoints))
        self._sequence = 0
        self.operations = OperationLog(process.world.record, self.name)

    @property
    def endpoint(self) -> str:
        return self.endpoints[self._endpoint % len(self.endpoints)]

    def rotate(self) -> None:
        self._endpoint += 1

    def _next_id(self) -> str:
        self._sequence += 1
        return f"{self.name}/{self.process.incarnation}/{self._sequence}"

    async def _once(self, request: Any) -> Result:
        body = ClientRequest(self._next_id(), request)
        outcome = await self.process.call(self.endpoint, body, port=CLIENT_PORT, timeout_s=self.timeout_s)
        if isinstance(outcome, Ok):
            reply: ClientReply = outcome.value
            if reply.ok:
                return Result("ok", reply, request_id=body.id)
            return Result("info" if reply.ambiguous else "fail", reply, reply.error, body.id)
        if isinstance(outcome, Failed):
            return Result("fail", None, outcome.reason, body.id)
        assert isinstance(outcome, Unknown)
        return Result("info", None, outcome.reason, body.id)

    async def request(self, request: Any, *, idempotent: bool) -> Result:
        """Send ``request`` with retries where safe (see the module docstring)."""
        first = await self._once(request)
        if first.ok or not self._retryable(first, idempotent):
            return first
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts - 1),
            wait=wait_exponential(multiplier=0.05, max=1.0),
            retry=retry_if_result(lambda result: not result.ok and self._retryable(result, idempotent)),
            sleep=self.process.sleep,
            retry_error_callback=lambda state: state.outcome.result(),  # the last outcome stands
        )
        await self.process.sleep(0.05)  # tenacity waits between its own attempts only
        return await retrying(self._once, request)

    def _retryable(self, result: Result, idempotent: bool) -> bool:
        """Safe to try again: it definitely did not happen, or it has no effect. Moves to
        the next endpoint as a side effect (the one that failed may be down)."""
        if result.reason == ERROR_REQUEST_TOO_LARGE:
            return False  # InvalidArgument: the same request fails the same way anywhere
        self.rotate()
        return result.status == "fail" or idempotent

    # -- recorded register operations -------------------------------------------------------
    async def read(self, key: str, *, serializable: bool = False) -> Any:
        """A read of ``key``: linearizable (ReadIndex, etcd's default) or ``serializable``
        (served by the member from its own store, which may be stale: etcd's API
        guarantees, https://etcd.io/docs/v3.5/learning/api_guarantees/). A serializable
        read is journaled with ``consistency: serializable`` on its invoke and the
        answering member and header ``revision`` on its completion, so the checkers judge
        it against the store at that revision and never as a linearizable read."""
        consistency = "serializable" if serializable else None
        op_id = self.operations.invoke("read", key, None, consistency=consistency)
        result = await self.request(RangeRequest(key, serializable=serializable), idempotent=True)
        if result.ok:
            response = result.reply.response
            kvs = response.kvs
            value = int(kvs[0].value) if kvs else None
            if serializable:
                self.operations.complete("ok", op_id, "read", key, None, value, revision=response.header_revision, member=result.reply.member)
            else:
                self.operations.complete("ok", op_id, "read", key, None, value)
            return value
        # A read has no effect: whatever happened to it, it is dropped from the history.
        self.operations.complete("fail", op_id, "read", key, None, reason=result.reason)
        return None

    async def write(self, key: str, value: int, *, size: int = 0) -> str:
        """A write of ``value``; ``size``: the bytes it weighs, if more than its text
        (``PutRequest.value_size``: a large object named by its text)."""
        op_id = self.operations.invoke("write", key, value)
        result = await self.request(PutRequest(key, str(value), value_size=size), idempotent=False)
        self.operations.complete(result.status, op_id, "write", key, value, reason=result.reason, request=result.request_id)
        return result.status

    async def cas(self, key: str, expected: int, new: int, *, size: int = 0) -> str:
        """Compare-and-set as a transaction on the value; ``ok`` output is whether it
        swapped (a compare that failed is a definite observation, not a failure).
        ``size`` as for :meth:`write`."""
        op_id = self.operations.invoke("cas", key, [expected, new])
        txn = TxnRequest(compare=(Compare(key, "VALUE", "=", str(expected)),), success=(PutRequest(key, str(new), value_size=size),))
        result = await self.request(txn, idempotent=False)
        if result.ok:
            succeeded = result.reply.response.succeeded
            self.operations.complete("ok", op_id, "cas", key, [expected, new], succeeded, request=result.request_id)
            return "ok" if succeeded else "fail"
        self.operations.complete(result.status, op_id, "cas", key, [expected, new], reason=result.reason, request=result.request_id)
        return result.status


    # -- Kubernetes' optimistic concurrency ----------------------------------------------------
    async def optimistic_write(self, kind: str, key: str, mod_revision: int, expected: int | None, new: int | None) -> tuple[str, KeyValue | None, int]:
        """One write as the API server makes it (etcd's robustness traffic, ``kubernetesClient``
        in ``tests/robustness/traffic/kubernetes.go``): a transaction on ``key`` whose compare
        is ``mod_revision(key) == mod_revision`` (0: the key is absent) and whose success is a
        put of ``new`` (create, update) or a delete (``new`` None), and whose failure branch
        (update, delete) gets the key so the caller can refresh what it knows.

        Journaled as a compare-and-set of the register ``key`` from ``expected`` (the value
        the caller saw at ``mod_revision``; None: absent) to ``new`` (None: deleted), with
        ``txn`` (the kind) and ``mod_revision`` on the invoke. The two compares are the same
        test because every written value is unique: the key holds ``expected`` exactly when
        its last write was the one at ``mod_revision``. Returns the status ("ok" when the
        transaction swapped, "fail" when its compare failed or it definitely did not happen,
        "info" when unknown), the key's current value on a failed compare, and the new
        mod revision on success."""
        assert kind in ("create", "update", "delete"), kind
        assert (new is None) == (kind == "delete"), (kind, new)
        assert (mod_revision == 0) == (kind == "create") and (expected is None) == (kind == "create"), (kind, mod_revision, expected)
        value = [expected, new]
        op_id = self.operations.invoke("cas", key, value, txn=kind, mod_revision=mod_revision)
        success: tuple[Any, ...] = (DeleteRangeRequest(key),) if new is None else (PutRequest(key, str(new)),)
        failure: tuple[Any, ...] = () if kind == "create" else (RangeRequest(key),)
        txn = TxnRequest(compare=(Compare(key, "MOD", "=", mod_revision),), success=success, failure=failure)
        result = await self.request(txn, idempotent=False)
        if not result.ok:
            self.operations.complete(result.status, op_id, "cas", key, value, reason=result.reason, request=result.request_id)
            return result.status, None, 0
        response = result.reply.response
        self.operations.complete("ok", op_id, "cas", key, value, response.succeeded, request=result.request_id)
        if response.succeeded:
            return "ok", None, response.header_revision
        current = None
        if response.responses and response.responses[0].kvs:
            current = response.responses[0].kvs[0]
        return "conflict", current, 0

    async def list(self, key: str, range_end: str, known: list[str]) -> Any:
        """A linearizable range over ``[key, range_end)`` (the API server's quorum list).
        Journaled as one read per key of ``known`` (the keys the caller knew of when it
        sent the list: a key absent from the answer was read as absent), all with the
        list's invocation and completion times: each is implied by the atomic range, so a
        violation among them is one of the list's; keys first seen in the answer are not
        judged from it. Returns the RangeResponse, or None when the list failed."""
        op_ids = [(name, self.operations.invoke("read", name, None)) for name in known]
        result = await self.request(RangeRequest(key, range_end), idempotent=True)
        if not result.ok:
            for name, op_id in op_ids:
                self.operations.complete("fail", op_id, "read", name, None, reason=result.reason)
            return None
        response = result.reply.response
        values = {kv.key: int(kv.value) for kv in response.kvs}
        for name, op_id in op_ids:
            self.operations.complete("ok", op_id, "read", name, None, values.get(name))
        return response


class Watcher:
    """A resumable watch on ``[key, range_end)`` that journals every event it receives as
    ``watch-event`` (watcher, revision, key, type, value). When its stream breaks (a lost
    message, a member that restarted or stopped answering), it watches again on the next
    endpoint from the last revision it saw + 1, as etcd clients do."""

    def __init__(
        self,
        process: Process,
        endpoints: list[str],
        key: str,
        range_end: str | None,
        *,
        start_revision: int = 1,
        name: str = "watcher",
        check_every_s: float = 1.0,
        on_event: Callable[[Any], None] | None = None,
        journal: bool = True,
    ) -> None:
        """``on_event`` is called with every event received, in order; ``journal`` False
        keeps the watcher's events out of the journal (a client's own informer-like view,
        not a watch the ``watch`` checker judges)."""
        self.process = process
        self.on_event = on_event
        self.journal = journal
        self.client = EtcdClient(process, endpoints, name=name)
        self.key = key
        self.range_end = range_end
        self.next_revision = start_revision
        self.name = name
        self.check_every_s = check_every_s
        self._streams = 0

    async def run(self) -> None:
        process = self.process
        world = process.world
        inbox = process.inbox(WATCH_PORT)
        while True:
            self._streams += 1
            watch_id = f"{self.name}/{process.incarnation}/{self._streams}"
            member = self.client.endpoint
            created = await process.call(member, WatchCreate(watch_id, self.key, self.range_end, self.next_revision), port=WATCH_PORT, timeout_s=self.client.timeout_s)
            if not (isinstance(created, Ok) and created.value.get("created")):
                reason = created.value.get("error") if isinstance(created, Ok) else type(created).__name__
                if self.journal:
                    world.record("watch-start", watcher=self.name, member=member, start_revision=self.next_revision, ok=False, reason=reason)
                self.client.rotate()
                await process.sleep(0.2)
                continue
            if self.journal:
                world.record("watch-start", watcher=self.name, member=member, start_revision=self.next_revision, ok=True)
            expected_sequence = 1
            while True:
                message = None
                with process.move_on_after(self.check_every_s):
                    message = await inbox.receive()
                if message is None:
                    progress = await process.call(member, WatchProgress(watch_id), port=WATCH_PORT, timeout_s=self.client.timeout_s)
                    if isinstance(progress, Ok) and progress.value.get("alive"):
                        continue
                    break  # the stream is gone: watch again elsewhere
                body = message.body
                if not isinstance(body, WatchEvents) or body.watch_id != watch_id:
                    continue  # a message from an older stream
                if body.sequence != expected_sequence:
                    break  # a message of the stream was lost: the stream is broken
                expected_sequence += 1
                for event in body.events:
                    if self.journal:
                        world.record("watch-event", watcher=self.name, member=member, revision=event.kv.mod_revision, key=event.kv.key, event=event.type, value=event.kv.value if event.type == "PUT" else None)
                    self.next_revision = event.kv.mod_revision + 1
                    if self.on_event is not None:
                        self.on_event(event)
            if self.journal:
                world.record("watch-break", watcher=self.name, member=member, next_revision=self.next_revision)
            self.client.rotate()

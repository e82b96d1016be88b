"""``GET /api/v1/namespaces/{ns}/pods/{name}/log``: what a simulated container "printed".

A simulated container runs no program, so it prints nothing of its own. What it has is a
life: the kubelet pulled its image, created and started it (with the command and args the
user declared), its probes passed or failed, it was told to stop, it exited with a code.
:class:`ContainerLogs` follows those records of the journal as the kubelet writes them
(``container-start``, ``probe``, ``container-kill``, ``container-term``, ``container-exit``
and the kubelet's ``k8s-event`` records about the container) and keeps them as log lines
per container instance, in simulated time; every line says it comes from chaoskube, so no
one takes it for the application's output. The kubelet keeps the current and the previous
instance's log (``--previous``), as the container runtime keeps the last terminated
container; older instances are dropped, and each instance keeps its last
:data:`MAX_LINES` lines (a log rotated by size).

The query parameters are ``PodLogOptions``' (``pkg/apis/core/types.go``): ``container``
(required when the pod has several: 400 with upstream's message otherwise,
``pkg/registry/core/pod/strategy.go`` ``LogLocation``), ``previous`` (400 "previous
terminated container ... not found" without one), ``timestamps`` (each line prefixed with
its RFC 3339 time with nanoseconds), ``tailLines``, ``sinceSeconds`` / ``sinceTime``,
``limitBytes``. ``follow`` answers what there is and ends the stream (not followed).
"""

from __future__ import annotations

import datetime as _dt
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.protocol import Status, StatusError, bad_request, parse_timestamp
from chaoskube.api import protocol

__all__ = ["MAX_LINES", "ContainerLogs", "log_options", "render", "with_declared"]

#: Lines kept per container instance.
MAX_LINES = 1000
#: Pods whose logs are kept (the least recently written go first).
MAX_PODS = 20_000
_PREFIX = "[chaoskube: simulated container]"


@dataclass
class _Instance:
    restart_count: int
    lines: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class _Container:
    current: _Instance | None = None
    previous: _Instance | None = None
    pending: list[tuple[float, str]] = field(default_factory=list)  # before the first start


class ContainerLogs:
    """The logs of every container the kubelets ran since :meth:`follow` (see the module
    docstring). Keyed by pod ``namespace/name`` and container name."""

    def __init__(self) -> None:
        self._pods: OrderedDict[str, dict[str, _Container]] = OrderedDict()

    def follow(self, world: Any) -> None:
        for kind in ("container-start", "container-exit", "container-term", "container-kill", "probe", "k8s-event"):
            world.on_record(kind, self._on_record)

    def _container(self, pod: str, name: str) -> _Container:
        containers = self._pods.get(pod)
        if containers is None:
            containers = self._pods[pod] = {}
            if len(self._pods) > MAX_PODS:
                self._pods.popitem(last=False)
        else:
            self._pods.move_to_end(pod)
        return containers.setdefault(name, _Container())

    def _write(self, container: _Container, t: float, text: str) -> None:
        target = container.current.lines if container.current is not None else container.pending
        target.append((t, f"{_PREFIX} {text}"))
        if len(target) > MAX_LINES:
            del target[0]

    def _on_record(self, event: dict[str, Any]) -> None:
        kind, t = event["type"], float(event["t"])
        if kind == "k8s-event":
            path = event.get("field_path") or ""
            if event.get("kind") != "Pod" or not path.startswith("spec.") or "{" not in path:
                return
            name = path[path.index("{") + 1 : -1]
            container = self._container(f"{event['namespace']}/{event['name']}", name)
            if event.get("reason") in ("Started", "Created"):
                return  # the start itself is written by container-start
            self._write(container, t, f"kubelet: {event.get('event_type', '')} {event.get('reason', '')}: {event.get('message', '')}")
            return
        container = self._container(str(event["pod"]), str(event["container"]))
        if kind == "container-start":
            restart = int(event.get("restart_count") or 0)
            if restart == 0:
                container.previous = None  # a new pod of the same name, or the first start
            elif container.current is not None:
                container.previous = container.current
            container.current = _Instance(restart, container.pending)
            container.pending = []
            self._write(container, t, f"started (restart {restart}, {event.get('container_id', '')}); the declared command runs only in simulation: it prints nothing of its own")
        elif kind == "probe":
            self._write(container, t, f"{event.get('probe')} probe: {event.get('result')}")
        elif kind == "container-kill":
            self._write(container, t, f"killed: {event.get('cause')} probe failed; stopping in {event.get('after_s')} s")
        elif kind == "container-term":
            self._write(container, t, f"SIGTERM (grace period {event.get('grace_s')} s); exits in {event.get('exit_after_s')} s with code {event.get('exit_code')}")
        elif kind == "container-exit":
            exited = t - float(event.get("exited_ago_s") or 0.0)
            self._write(container, exited, f"exited with code {event.get('exit_code')} ({event.get('reason')}, {event.get('cause')})")

    def lines(self, pod: str, container: str, *, previous: bool) -> list[tuple[float, str]] | None:
        """The instance's lines, or None when there is no such instance."""
        found = self._pods.get(pod, {}).get(container)
        if found is None:
            return None if previous else []
        instance = found.previous if previous else found.current
        if instance is None:
            return None if previous else list(found.pending)
        return list(instance.lines)


def _int(query: dict[str, str], name: str) -> int | None:
    text = query.get(name)
    if text in (None, ""):
        return None
    try:
        value = int(text)
    except ValueError:
        raise StatusError(bad_request(f"{name}: Invalid value: {text!r}: must be an integer")) from None
    if value < 0 or (value == 0 and name != "tailLines"):
        raise StatusError(Status(422, "Invalid", f'PodLogOptions "" is invalid: {name}: Invalid value: {value}: must be greater than {0 if name != "tailLines" else -1}'))
    return value


def log_options(pod: Any, query: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """The container a log request names (``LogLocation``) and its options; StatusError 400
    for a pod with several containers and none named, or a container not in the pod."""
    name = pod.metadata.name
    containers = [c.name for c in pod.spec.containers]
    init = [c.name for c in pod.spec.init_containers]
    container = query.get("container", "")
    if not container:
        if len(containers) == 1:
            container = containers[0]
        elif not containers:
            raise StatusError(bad_request(f"a container name must be specified for pod {name}"))
        else:
            message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            if init:
                message += f" or one of the init containers: [{' '.join(init)}]"
            raise StatusError(bad_request(message))
    elif container not in containers and container not in init:
        raise StatusError(bad_request(f"container {container} is not valid for pod {name}"))
    options: dict[str, Any] = {
        "previous": query.get("previous", "").lower() in ("1", "true"),
        "timestamps": query.get("timestamps", "").lower() in ("1", "true"),
        "tail": _int(query, "tailLines"),
        "since_s": _int(query, "sinceSeconds"),
        "limit_bytes": _int(query, "limitBytes"),
        "since_time": None,
    }
    if query.get("sinceTime"):
        if options["since_s"] is not None:
            raise StatusError(Status(422, "Invalid", 'PodLogOptions "" is invalid: sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'))
        try:
            options["since_time"] = parse_timestamp(query["sinceTime"])
        except ValueError:
            raise StatusError(bad_request(f"sinceTime: Invalid value: {query['sinceTime']!r}")) from None
    return container, options


def with_declared(lines: list[tuple[float, str]], spec: Any) -> list[tuple[float, str]]:
    """``lines`` with the container's declared image, command and args (``spec``: its
    Container) said at each start: what it would have run."""
    import json

    declared = f"image {spec.image}, command {json.dumps(list(spec.command or []))}, args {json.dumps(list(spec.args or []))}"
    return [(t, f"{text} [declared: {declared}]" if " started (restart " in text else text) for t, text in lines]


def _stamp(t: float) -> str:
    moment = protocol.EPOCH + _dt.timedelta(microseconds=int(t * 1_000_000))
    nanos = int(round(t * 1_000_000_000)) % 1_000_000_000
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"


def render(lines: list[tuple[float, str]], now: float, options: dict[str, Any]) -> bytes:
    """The body of the log answer for ``lines`` under ``options`` (see :func:`log_options`)."""
    if options["since_s"] is not None:
        lines = [line for line in lines if line[0] >= now - options["since_s"]]
    elif options["since_time"] is not None:
        lines = [line for line in lines if line[0] >= options["since_time"]]
    if options["tail"] is not None:
        lines = lines[-options["tail"] :] if options["tail"] else []
    text = "".join(f"{_stamp(t) + ' ' if options['timestamps'] else ''}{line}\n" for t, line in lines)
    data = text.encode()
    if options["limit_bytes"] is not None:
        data = data[: options["limit_bytes"]]
    return data

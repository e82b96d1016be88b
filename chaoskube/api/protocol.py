"""What clients and API servers say to each other over the simulated network.

The REST API reduced to its meaning: a :class:`Request` names a verb, a resource (the
plural, as in the URL), a namespace, a name and a subresource, as kube-apiserver's
``RequestInfo`` resolves them from ``/api/v1/namespaces/<ns>/pods/<name>/status``; the
body is an object, a patch document, an :class:`Eviction` or a :class:`Binding`. The
answer is a :class:`Response` whose ``code`` is the HTTP status; refusals carry a
:class:`Status` with Kubernetes' ``reason`` and message (``apimachinery/pkg/api/errors``).

Watches: a ``watch`` request is answered once (200, or an error such as 410 Gone); the
events then arrive on :data:`WATCH_PORT` as :class:`WatchMessage`s numbered from 1, so the
client notices a lost message and watches again. :class:`WatchProbe` stands for the
HTTP/2 ping that tells a client its stream's server is gone; :class:`WatchStop` closes it.

Credentials stand for what a real client presents: a bearer token (a static token or a
service account token) or an x509 client certificate (CN is the user, O the groups).
The API server authenticates them; a request never carries a trusted identity.

Times: objects carry RFC 3339 timestamps (``metav1.Time``, second precision;
``MicroTime`` for Leases). Virtual time 0 is :data:`EPOCH`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Literal

from chaoskube.api.objects import KINDS, Object

__all__ = [
    "API_PORT",
    "EPOCH",
    "SIMULATION_EPOCH",
    "WATCH_PORT",
    "Binding",
    "Credentials",
    "DeleteOptions",
    "Eviction",
    "NonResourceRequest",
    "Request",
    "Response",
    "Status",
    "StatusError",
    "WatchEvent",
    "WatchMessage",
    "WatchProbe",
    "WatchStop",
    "already_exists",
    "bad_request",
    "conflict",
    "forbidden",
    "gone",
    "internal_error",
    "invalid",
    "kind_of_resource",
    "micro_timestamp",
    "not_found",
    "parse_timestamp",
    "qualified_resource",
    "service_unavailable",
    "set_epoch",
    "timeout",
    "timestamp",
    "too_many_requests",
    "unauthorized",
]

API_PORT = "kube-api"  # client -> API server requests (HTTPS :6443)
WATCH_PORT = "kube-watch"  # API server -> client watch streams

#: Virtual time 0 as wall time, for timestamps in objects. Fixed, so that a run is a
#: function of its seed; a live run (``chaoskube serve``) moves it with :func:`set_epoch` so
#: that the wall time of virtual "now" is the wall clock's now: real clients compare object
#: timestamps with their own clock (``kubectl describe``'s ages, an operator's requeue after
#: creationTimestamp + N). Read it as ``protocol.EPOCH`` at the time of use, never copied.
EPOCH = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)
#: The epoch of every simulated run.
SIMULATION_EPOCH = EPOCH


def set_epoch(moment: _dt.datetime) -> _dt.datetime:
    """Make ``moment`` (timezone-aware) virtual time 0 for every timestamp written or read
    from now on in this process; returns the epoch it replaces (to put back). For live runs
    only: a simulated run keeps :data:`SIMULATION_EPOCH`."""
    global EPOCH
    assert moment.tzinfo is not None, moment
    previous, EPOCH = EPOCH, moment
    return previous

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
#: application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json
PATCH_TYPES = ("merge", "json", "strategic", "apply")
WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]

_RESOURCES = {info.resource: info.kind for info in KINDS.values()}


def kind_of_resource(resource: str) -> str | None:
    """The kind served at a plural resource name ("pods" -> "Pod"), or None."""
    return _RESOURCES.get(resource)


def qualified_resource(resource: str) -> str:
    """``schema.GroupResource.String()``: "pods", "deployments.apps",
    "poddisruptionbudgets.policy" — how error messages name a resource."""
    kind = _RESOURCES.get(resource)
    if kind is None:
        return resource
    group = KINDS[kind].api_version.rpartition("/")[0]
    return f"{resource}.{group}" if group else resource


_LAST_TIMESTAMP: tuple[_dt.datetime, int, str] | None = None


def timestamp(now: float) -> str:
    """``metav1.Time`` of virtual time ``now``: RFC 3339, whole seconds (truncated). The
    last answer is kept (with the epoch it was made from): every write, Event and status
    of one simulated second asks for the same text."""
    global _LAST_TIMESTAMP
    seconds = int(now // 1)
    last = _LAST_TIMESTAMP
    if last is not None and last[1] == seconds and last[0] is EPOCH:
        return last[2]
    text = (EPOCH + _dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    _LAST_TIMESTAMP = (EPOCH, seconds, text)
    return text


def micro_timestamp(now: float) -> str:
    """``metav1.MicroTime`` of virtual time ``now``: RFC 3339 with microseconds."""
    moment = EPOCH + _dt.timedelta(microseconds=round(now * 1_000_000))
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(text: str) -> float:
    """Inverse of :func:`timestamp` and :func:`micro_timestamp`: virtual seconds."""
    moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return (moment - EPOCH).total_seconds()


# =========================================================================== requests


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a client presents. ``token``: a bearer token (static, or a service account's);
    ``common_name`` / ``organizations``: an x509 client certificate's subject."""

    token: str = ""
    common_name: str = ""
    organizations: tuple[str, ...] = ()
    #: ``Impersonate-User`` / ``Impersonate-Group`` (``kubectl --as`` / ``--as-group``): the
    #: identity the request is made as, if the presenter may impersonate it.
    impersonate_user: str = ""
    impersonate_groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOptions:
    """``metav1.DeleteOptions``: ``grace_period_seconds`` None means the kind's default (a
    pod's ``terminationGracePeriodSeconds``); preconditions fail the delete with 409;
    ``propagation_policy`` is "Orphan", "Background" or "Foreground" ("" = the resource's
    default, background for every kind served here), as ``kubectl delete --cascade``."""

    grace_period_seconds: int | None = None
    preconditions_uid: str = ""
    preconditions_resource_version: str = ""
    propagation_policy: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Eviction:
    """``policy/v1`` Eviction: the body of ``POST pods/<name>/eviction``."""

    name: str
    namespace: str
    delete_options: DeleteOptions | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    """``v1`` Binding: the body of ``POST pods/<name>/binding`` (the scheduler's write)."""

    name: str
    namespace: str
    target_node: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """One API request. ``body``: the object (create, update), the patch document (patch,
    with ``patch_type``), an :class:`Eviction` or :class:`Binding` (their subresources).
    ``resource_version`` / ``resource_version_match`` as in ``metav1.ListOptions``: unset
    asks for a quorum read from etcd; "0" for any cached state; "N" for state not older
    than N (``NotOlderThan``, the default) or exactly N (``Exact``)."""

    verb: str
    resource: str
    credentials: Credentials
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    body: Any = None
    patch_type: str = "merge"
    label_selector: str = ""
    field_selector: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    allow_watch_bookmarks: bool = False
    timeout_seconds: int | None = None  # a watch ends after this (client-go: 5-10 min)
    watch_id: str = ""
    delete_options: DeleteOptions | None = None
    dry_run: bool = False
    #: ``fieldValidation`` of a patch: "" or "Strict" refuse a patched object with unknown
    #: fields, "Warn" drops them with a warning each, "Ignore" drops them silently
    #: (:mod:`chaoskube.api.fields`). Bodies of creates and updates arrive typed: whoever
    #: decoded them (the HTTP front) applied the directive.
    field_validation: str = ""
    #: ``fieldManager`` (create, update, patch): who the write's fields belong to in
    #: ``managedFields`` ("" for upstream's "unknown"); the HTTP front fills it from the
    #: query or the user agent (``managerOrUserAgent``). ``force``: an apply
    #: (``patch_type`` "apply") takes the fields other managers own instead of a 409.
    field_manager: str = ""
    force: bool = False
    #: The subresource the write's managedFields entry names when it is not ``subresource``:
    #: a ``/scale`` write reaches the server as an update of its parent, recorded as
    #: ``subresource: scale`` (``ScaleHandler.ToParent``).
    managed_as: str = ""
    id: str = ""  # the client's request id, for the journal
    #: The API version the request addressed (``v1beta1`` of ``/apis/GROUP/v1beta1/...``):
    #: the HTTPS front fills it from the URL; "" for an in-process client, which names no
    #: version (it addresses each kind at the version it was built for). The server serves
    #: a custom resource only at a version its CRD marks ``served``
    #: (:func:`chaoskube.apiserver.crd.served_version`).
    version: str = ""

    def __post_init__(self) -> None:
        assert self.verb in VERBS, f"unknown verb {self.verb!r}"
        assert self.patch_type in PATCH_TYPES, f"unknown patch type {self.patch_type!r}"
        assert self.verb != "watch" or self.watch_id, "a watch names its stream"


@dataclass(frozen=True, slots=True, kw_only=True)
class NonResourceRequest:
    """A request for a non-resource path (``/version``, ``/api``, ``/apis``, ``/openapi/...``,
    ``/healthz``): the server authenticates it and answers 200 (or 401); what the path
    serves is computed by the HTTP front, so that such requests still cross the simulated
    network and wait, stall or fail as the server's other requests do."""

    path: str
    credentials: Credentials


# =========================================================================== answers


@dataclass(frozen=True, slots=True)
class Status:
    """``metav1.Status`` of a failure: ``reason`` is a ``metav1.StatusReason``
    ("NotFound", "Conflict", "Expired", ...)."""

    code: int
    reason: str
    message: str
    retry_after_seconds: int = 0
    causes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Response:
    """``code``: the HTTP status. Success: ``object`` (get, create, update, patch, delete) or
    ``items`` and the list's ``resource_version`` (list). Failure: ``status``."""

    code: int
    object: Object | None = None
    items: tuple[Object, ...] = ()
    resource_version: str = ""
    status: Status | None = None
    server: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300

    def __post_init__(self) -> None:
        assert self.ok or self.status is not None, "a failure carries a Status"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """``metav1.WatchEvent``. BOOKMARK carries only the resource version (``object`` is
    None); ERROR carries a ``status`` (410 Expired when the stream fell too far behind)."""

    type: WatchEventType
    object: Object | None = None
    resource_version: str = ""
    status: Status | None = None


@dataclass(frozen=True, slots=True)
class WatchMessage:
    watch_id: str
    sequence: int
    events: tuple[WatchEvent, ...]
    closed: bool = False  # the server ended the stream (timeout, cache reset, shutdown)


@dataclass(frozen=True, slots=True)
class WatchProbe:
    """Is stream ``watch_id`` still open? Answered ``{"alive": bool}``."""

    watch_id: str


@dataclass(frozen=True, slots=True)
class WatchStop:
    watch_id: str


# =========================================================================== errors
# Messages as apimachinery/pkg/api/errors/errors.go words them.


class StatusError(Exception):
    """An operation ended with an API failure ``status`` (``apierrors.StatusError``)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def _named(resource: str, name: str) -> str:
    return f'{qualified_resource(resource)} "{name}"'


def not_found(resource: str, name: str) -> Status:
    return Status(404, "NotFound", f"{_named(resource, name)} not found")


def already_exists(resource: str, name: str) -> Status:
    return Status(409, "AlreadyExists", f"{_named(resource, name)} already exists")


def conflict(resource: str, name: str, why: str = "the object has been modified; please apply your changes to the latest version and try again") -> Status:
    return Status(409, "Conflict", f"Operation cannot be fulfilled on {_named(resource, name)}: {why}")


def gone(message: str) -> Status:
    """``NewResourceExpired``: 410 with reason Expired ("too old resource version: 5 (17)")."""
    return Status(410, "Expired", message)


def forbidden(message: str) -> Status:
    return Status(403, "Forbidden", message)


def unauthorized() -> Status:
    return Status(401, "Unauthorized", "Unauthorized")


def bad_request(message: str) -> Status:
    return Status(400, "BadRequest", message)


def invalid(resource: str, name: str, causes: list[str], *, kind: str = "") -> Status:
    """``NewInvalid``: 422, ``<Kind>[.<group>] "<name>" is invalid: <cause>`` — several
    causes as an aggregate, ``[<cause>, <cause>]``. ``kind`` names a custom resource's kind
    (``resource`` is then ``<plural>.<group>``)."""
    qualified = resource
    builtin = kind_of_resource(resource)
    if kind:
        qualified = f"{kind}.{resource.partition('.')[2]}"
    elif builtin is not None:
        group = KINDS[builtin].api_version.rpartition("/")[0]
        qualified = f"{builtin}.{group}" if group else builtin
    detail = causes[0] if len(causes) == 1 else f"[{', '.join(causes)}]"
    return Status(422, "Invalid", f'{qualified} "{name}" is invalid: {detail}', causes=tuple(causes))


def too_many_requests(message: str, retry_after_seconds: int = 0, causes: tuple[str, ...] = ()) -> Status:
    return Status(429, "TooManyRequests", message, retry_after_seconds, causes)


def internal_error(message: str) -> Status:
    return Status(500, "InternalError", f"Internal error occurred: {message}")


def service_unavailable(message: str) -> Status:
    return Status(503, "ServiceUnavailable", message)


def timeout(message: str, retry_after_seconds: int = 0) -> Status:
    """``NewTimeoutError``: 504, "Timeout: <message>"."""
    return Status(504, "Timeout", f"Timeout: {message}", retry_after_seconds)


#: ``metav1.DeletionPropagation`` values, and the finalizers the garbage collector acts on
#: (``metav1.FinalizerOrphanDependents``, ``metav1.FinalizerDeleteDependents``).
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"

"""Custom resources, judged from the store's history against their CustomResourceDefinitions,
with a small model of structural schemas written here from the documentation -- never the API
server's own pruning, defaulting and validation code (:mod:`chaoskube.apiserver.crd`).

The Kubernetes behaviour checked ("Extend the Kubernetes API with CustomResourceDefinitions",
https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/:
"Field pruning", "Defaulting", "Validation", "Status subresource";
"Versions in CustomResourceDefinitions",
https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/;
``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go``,
``.../schema/defaulting/algorithm.go``, ``.../apiserver/validation/validation.go``,
``.../registry/customresource/strategy.go`` and ``status_strategy.go``). At every write of a
custom object to the store (``/registry/<plural>.<group>/[<namespace>/]<name>``), by the
CRD in force at the write:

1. **Stored at the storage version**: its ``apiVersion`` is ``<group>/<version>`` of the
   version marked ``storage: true`` and its ``kind`` the CRD's kind ("the storage version
   ... is the version objects are persisted in etcd"), a version the CRD's
   ``status.storedVersions`` records ("storedVersions lists all versions of
   CustomResources that were ever persisted"; upstream's CRD strategy adds the storage
   version there in the same write that makes it the storage version);
2. **Pruned**: no field the version's schema does not specify, except under
   ``x-kubernetes-preserve-unknown-fields: true`` (and ``apiVersion`` / ``kind`` /
   ``metadata`` of the root and of ``x-kubernetes-embedded-resource`` objects);
3. **Defaulted**: no property with a ``default`` is missing (or null where the schema is
   not nullable) inside an object that is present ("defaults are applied ... when reading
   from etcd, on create and update requests, after mutating admission");
4. **Valid**: type (``integer`` for whole JSON numbers), ``nullable``, ``enum``,
   ``required``, ``minimum`` / ``maximum`` (and exclusive), ``minLength`` / ``maxLength``,
   ``pattern``, ``minItems`` / ``maxItems``, ``minProperties`` / ``maxProperties``,
   ``x-kubernetes-int-or-string``;
5. **Status subresource**: with ``subresources.status``, a created object has no
   ``status`` ("PUT/POST/PATCH requests to the custom resource ignore changes to the status
   stanza") and no single write changes both ``status`` and another top-level field
   ("PUT requests to the /status subresource ... ignore changes to anything except the
   status stanza"; kubernetes#63359, PR #63385);
6. **Served only while defined**: no custom object is written once its CRD has left the
   store (or been marked for deletion) ``lag_s`` before: the API server's CRD cache lags,
   nothing more; and when a CRD leaves the store none of its objects remain (the
   ``customresourcecleanup.apiextensions.k8s.io`` finalizer deletes them first).

7. **Served versions**: every request the API server journals (``api-request``: the
   writes) that names the version it addressed (``version``: the HTTPS front's URL, or a
   client that named one), and every read through the HTTPS front (``http-request``,
   GET: the version of its path), at a version no CRD revision an API server could hold while
   serving it marks ``served: true`` -- one it lists with ``served: false``, the storage
   version too, or one it does not list -- is not handled: no 2xx, no 409 Conflict, no
   422 Invalid (upstream's ``crdHandler.ServeHTTP`` hands it to the delegate, which answers
   404 NotFound: ``if !apiextensionshelpers.HasServedCRDVersion(crd,
   requestInfo.APIVersion)``, ``.../pkg/apiserver/customresource_handler.go``; "Each version
   can be enabled/disabled by Served flag", "Versions in CustomResourceDefinitions").

Bounds and unknown cases. The schema in force is that of every CRD revision stored within
``lag_s`` before the write (a CRD changed while its objects are written is judged by any
schema an API server could still hold, so no false alarm; such writes are counted,
``writes_with_changed_crd``). An object never rewritten after its CRD changed is not judged
again (upstream defaults it on read; the store keeps what was written). Not judged, counted
in ``features_not_judged``: ``format``, ``multipleOf``, ``uniqueItems``, ``allOf`` /
``anyOf`` / ``oneOf`` / ``not`` and CEL rules (``x-kubernetes-validations``), and
conversion webhooks (the simulation converts with strategy None). A pattern Python cannot
compile is not judged. A request is judged by every CRD revision stored within
``lag_s`` plus ``request_s`` (60 s, ``--request-timeout``: the server checked the version
when the request began, the journal records its end) before its answer, and passes if any
of them served its version; a request whose CRD the store never held is not judged
(``requests_unjudged``), nor one that names no version (in-process clients), nor a read of
an in-process client (the API server journals writes; reads only through the front). A 404
at a served version is not judged either: the journal does not tell "no such resource"
from "no such object".

``check_crd_invariants(events)`` answers False with the first finding, unknown when no custom
object of a CRD was written, True otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from chaoskube.checkers.replay import first_applies, parse_key
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_crd_invariants", "schema_problems"]

Event = dict[str, Any]
Schema = Mapping[str, Any]

LAG_S = 10.0
#: ``--request-timeout`` (kube-apiserver's default, 60 s): how long before its journaled
#: answer a request may have been checked against the CRD cache.
REQUEST_S = 60.0
#: Answers that show a custom resource's handler ran (an answer from the delegate is 404).
_HANDLED = (409, 422)
_ROOT_META = ("apiVersion", "kind", "metadata")
#: Schema keywords this model does not judge (module docstring).
NOT_JUDGED = ("format", "multipleOf", "uniqueItems", "allOf", "anyOf", "oneOf", "not", "x-kubernetes-validations")


# =========================================================================== the schema model
def schema_problems(document: Mapping[str, Any], schema: Schema, not_judged: set[str] | None = None) -> list[tuple[str, str]]:
    """``(rule, problem)`` for every way ``document`` (a whole custom object) is not pruned,
    defaulted or valid by ``schema`` (a version's ``openAPIV3Schema``); empty when it is."""
    found: list[tuple[str, str]] = []
    skipped = not_judged if not_judged is not None else set()
    body = {key: value for key, value in document.items() if key not in _ROOT_META}
    properties = {key: value for key, value in (schema.get("properties") or {}).items() if key not in _ROOT_META}
    root = {**schema, "properties": properties, "required": [name for name in schema.get("required") or () if name not in _ROOT_META]}
    _walk(body, root, "", found, skipped)
    return found


def _path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _type_ok(kind: str, value: Any) -> bool:
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": _is_integer(value),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
    }.get(kind, True)


def _walk(value: Any, schema: Schema, path: str, found: list[tuple[str, str]], skipped: set[str]) -> None:
    where = path or "<root>"
    for keyword in NOT_JUDGED:
        if keyword in schema:
            skipped.add(keyword)
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            found.append(("invalid", f"{where} is null, not nullable"))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _is_integer(value)):
            found.append(("invalid", f"{where} is neither an integer nor a string"))
        return
    kind = schema.get("type")
    if kind and not _type_ok(kind, value):
        found.append(("invalid", f"{where} is not of type {kind}: {json.dumps(value)[:60]}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        found.append(("invalid", f"{where} = {json.dumps(value)[:60]} is not one of {json.dumps(schema['enum'])[:80]}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and (value < low or (schema.get("exclusiveMinimum") and value == low)):
            found.append(("invalid", f"{where} = {value} is below its minimum {low}"))
        if high is not None and (value > high or (schema.get("exclusiveMaximum") and value == high)):
            found.append(("invalid", f"{where} = {value} is above its maximum {high}"))
    if isinstance(value, str):
        if schema.get("minLength") is not None and len(value) < schema["minLength"]:
            found.append(("invalid", f"{where} is shorter than {schema['minLength']}"))
        if schema.get("maxLength") is not None and len(value) > schema["maxLength"]:
            found.append(("invalid", f"{where} is longer than {schema['maxLength']}"))
        if schema.get("pattern") is not None:
            try:
                if re.search(schema["pattern"], value) is None:
                    found.append(("invalid", f"{where} = {value!r} does not match {schema['pattern']!r}"))
            except re.error:
                skipped.add("pattern")
    if isinstance(value, list):
        if schema.get("minItems") is not None and len(value) < schema["minItems"]:
            found.append(("invalid", f"{where} has fewer than {schema['minItems']} items"))
        if schema.get("maxItems") is not None and len(value) > schema["maxItems"]:
            found.append(("invalid", f"{where} has more than {schema['maxItems']} items"))
        items = schema.get("items")
        for index, item in enumerate(value):
            if isinstance(items, Mapping):
                _walk(item, items, f"{path}[{index}]", found, skipped)
            elif isinstance(item, dict) and item and not schema.get("x-kubernetes-preserve-unknown-fields"):
                found.append(("unpruned", f"{path}[{index}] keeps fields its schema does not specify"))
    if isinstance(value, dict):
        _object(value, schema, path, found, skipped)


def _object(value: dict[str, Any], schema: Schema, path: str, found: list[tuple[str, str]], skipped: set[str]) -> None:
    where = path or "<root>"
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = schema.get("x-kubernetes-embedded-resource") is True
    if schema.get("minProperties") is not None and len(value) < schema["minProperties"]:
        found.append(("invalid", f"{where} has fewer than {schema['minProperties']} properties"))
    if schema.get("maxProperties") is not None and len(value) > schema["maxProperties"]:
        found.append(("invalid", f"{where} has more than {schema['maxProperties']} properties"))
    for name in schema.get("required") or ():
        if name not in value:
            found.append(("invalid", f"{_path(path, name)} is required"))
    for name in sorted(properties):
        child = properties[name]
        if isinstance(child, Mapping) and "default" in child:
            if name not in value or (value[name] is None and not child.get("nullable")):
                found.append(("undefaulted", f"{_path(path, name)} is missing its default {json.dumps(child['default'])[:60]}"))
    for key in sorted(value):
        if key in properties:
            if isinstance(properties[key], Mapping):
                _walk(value[key], properties[key], _path(path, key), found, skipped)
        elif isinstance(additional, Mapping):
            _walk(value[key], additional, _path(path, key), found, skipped)
        elif additional is True or preserve or (embedded and key in _ROOT_META):
            continue
        else:
            found.append(("unpruned", f"{_path(path, key)} is not in the schema (not pruned)"))


# =========================================================================== the history
class _Crd:
    __slots__ = ("revisions", "gone_t", "terminating_t")

    def __init__(self) -> None:
        self.revisions: list[tuple[float, dict[str, Any]]] = []  # (stored at, the CRD document)
        self.gone_t: float | None = None
        self.terminating_t: float | None = None


def _in_force(crd: _Crd, t: float, lag_s: float) -> list[dict[str, Any]]:
    """The CRD revisions an API server may have held at ``t``: the last one stored before
    ``t - lag_s`` and every one stored since."""
    chosen: list[dict[str, Any]] = []
    for stored_t, document in crd.revisions:
        if stored_t <= t - lag_s:
            chosen = [document]
        elif stored_t <= t:
            chosen.append(document)
    return chosen


def _version(crd: dict[str, Any], name: str) -> dict[str, Any] | None:
    for version in (crd.get("spec") or {}).get("versions") or ():
        if version.get("name") == name:
            return version
    return None


def _judge(document: dict[str, Any], previous: dict[str, Any] | None, crd: dict[str, Any], skipped: set[str]) -> list[tuple[str, str]]:
    """The findings for one write of ``document`` under one CRD revision."""
    spec = crd.get("spec") or {}
    group = spec.get("group", "")
    storage = next((version for version in spec.get("versions") or () if version.get("storage")), None)
    api_version = str(document.get("apiVersion", ""))
    found: list[tuple[str, str]] = []
    if storage is None or api_version != f"{group}/{storage.get('name')}":
        found.append(("storage-version", f"stored as {api_version}, the storage version is {group}/{storage.get('name') if storage else '?'}"))
    stored = (crd.get("status") or {}).get("storedVersions") or []
    if api_version.rpartition("/")[2] not in stored:
        found.append(("storage-version", f"stored as {api_version}, a version the CRD's status.storedVersions {stored} does not record"))
    kind = (spec.get("names") or {}).get("kind")
    if document.get("kind") != kind:
        found.append(("storage-version", f"stored as kind {document.get('kind')}, the CRD's kind is {kind}"))
    version = _version(crd, api_version.rpartition("/")[2])
    schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
    if isinstance(schema, Mapping):
        found += schema_problems(document, schema, skipped)
    with_status = "status" in ((version or {}).get("subresources") or {})
    if with_status:
        if previous is None and "status" in document:
            found.append(("status-subresource", "created with a status, which the status subresource leaves to /status"))
        if previous is not None and document.get("status") != previous.get("status"):
            changed = sorted(key for key in set(document) | set(previous) if key not in (*_ROOT_META, "status") and document.get(key) != previous.get(key))
            if changed:
                found.append(("status-subresource", f"one write changed status and {', '.join(changed)}"))
    return found


def _served(crd: dict[str, Any], name: str) -> bool:
    version = _version(crd, name)
    return version is not None and version.get("served") is True


def _read_at(event: Event) -> tuple[str, str, str, str] | None:
    """(resource ``<plural>.<group>``, version, namespace, name) of an ``http-request``
    record of a read (GET) of a group's resource through the HTTPS front, or None."""
    if event.get("method") not in ("GET", "HEAD"):
        return None
    parts = [part for part in str(event.get("path", "")).split("/") if part]
    if len(parts) < 4 or parts[0] != "apis":
        return None
    group, version, rest = parts[1], parts[2], parts[3:]
    if rest and rest[0] == "watch":
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    return f"{rest[0]}.{group}", version, namespace, rest[1] if len(rest) > 1 else ""


def _check_versions(events: Sequence[Event], crds: dict[str, _Crd], counts: dict[str, int], window_s: float) -> Verdict | None:
    """Rule 7 (module docstring) over the journal's ``api-request`` records (writes) and
    the HTTPS front's ``http-request`` records of reads."""
    for event in events:
        if event.get("type") == "http-request":
            read = _read_at(event)
            if read is None or read[0] not in crds:
                continue
            event = {**event, "resource": read[0], "version": read[1], "namespace": read[2], "name": read[3], "verb": "read"}
        elif event.get("type") != "api-request" or not event.get("version"):
            continue
        resource, version, code = str(event.get("resource", "")), str(event["version"]), event.get("code")
        crd = crds.get(resource)
        candidates = _in_force(crd, float(event["t"]), window_s) if crd is not None else []
        if not candidates:
            counts["requests_unjudged"] += 1
            continue
        counts["requests_checked"] += 1
        if any(_served(document, version) for document in candidates):
            continue
        if isinstance(code, int) and (200 <= code < 300 or code in _HANDLED):
            where = f"{resource}/{event.get('namespace') + '/' if event.get('namespace') else ''}{event.get('name', '')}"
            versions = [{"name": entry.get("name"), "served": entry.get("served"), "storage": entry.get("storage")} for entry in (candidates[-1].get("spec") or {}).get("versions") or ()]
            listed = ", ".join(str(entry["name"]) + ("" if entry["served"] else " (served: false)") for entry in versions)
            return _violation("unserved-version", float(event["t"]), where,
                              f"{event.get('server', '?')} answered {code} to a {event.get('verb')} of {where} at version {version}, which its CRD does not serve "
                              f"(versions: {listed}); upstream answers 404 NotFound",
                              counts, {"request": {key: event.get(key) for key in ("server", "id", "verb", "resource", "namespace", "name", "version", "code")}, "versions": versions})
    return None


def check_crd_invariants(events: Sequence[Event], *, lag_s: float = LAG_S, request_s: float = REQUEST_S) -> Verdict:
    """Judge the custom resource rules (module docstring)."""
    crds: dict[str, _Crd] = {}  # CRD name (<plural>.<group>) -> its history
    live: dict[str, dict[str, dict[str, Any]]] = {}  # CRD name -> object key -> stored document
    skipped: set[str] = set()
    counts = {"crds": 0, "writes_checked": 0, "writes_with_changed_crd": 0, "requests_checked": 0, "requests_unjudged": 0}
    for event in first_applies(events):
        revision = event["revision"]
        t = event["t"]
        for entry in event["events"]:
            kind, key, value = entry[0], entry[1], entry[2]
            parsed = parse_key(key)
            if parsed is None:
                continue
            resource, name = parsed
            if resource == "customresourcedefinitions":
                crd = crds.setdefault(name, _Crd())
                if kind == "DELETE":
                    crd.gone_t = t
                    left = sorted(live.get(name, {}))
                    if left:
                        return _violation("crd-deleted-with-objects", t, f"customresourcedefinitions/{name}",
                                          f"CRD {name} left the store at t={t:.3f} with {len(left)} custom object(s) still stored: {', '.join(left[:5])}",
                                          counts, {"left": left[:20]})
                    continue
                document = _load(value)
                if document is None:
                    continue
                if crd.gone_t is not None or not crd.revisions:
                    counts["crds"] += 1
                    crd.gone_t = None
                    crd.terminating_t = None
                crd.revisions.append((t, document))
                if (document.get("metadata") or {}).get("deletionTimestamp") and crd.terminating_t is None:
                    crd.terminating_t = t
                continue
            if "." not in resource or resource not in crds:
                continue
            crd = crds[resource]
            objects = live.setdefault(resource, {})
            if kind == "DELETE":
                objects.pop(name, None)
                continue
            document = _load(value)
            if document is None:
                continue
            previous = objects.get(name)
            objects[name] = document
            counts["writes_checked"] += 1
            ended = crd.gone_t if crd.gone_t is not None else crd.terminating_t if previous is None else None
            if ended is not None and t >= ended + lag_s:
                state = "left the store" if crd.gone_t is not None else "was marked for deletion"
                return _violation("written-after-crd-deleted", t, f"{resource}/{name}",
                                  f"{resource}/{name} was {'created' if previous is None else 'written'} at t={t:.3f}, after its CRD {state} at t={ended:.3f}",
                                  counts, {})
            candidates = _in_force(crd, t, lag_s)
            if not candidates:
                continue
            if len(candidates) > 1:
                counts["writes_with_changed_crd"] += 1
            findings = [_judge(document, previous, candidate, skipped) for candidate in candidates]
            if all(findings):
                rule, problem = findings[-1][0]
                return _violation(rule, t, f"{resource}/{name}", f"{resource}/{name} stored at t={t:.3f} (revision {revision}): {problem}", counts,
                                  {"problems": [text for _, text in findings[-1][:10]], "object": _trim(document)})
    found = _check_versions(events, crds, counts, lag_s + request_s)
    if found is not None:
        return found
    if not counts["writes_checked"] and not counts["requests_checked"]:
        return nothing_to_judge("no custom object of a CustomResourceDefinition was written: nothing to judge", (), counts)
    details: dict[str, Any] = {**counts, "features_not_judged": sorted(skipped)}
    return Verdict(True, (
        f"{counts['writes_checked']} write(s) of custom objects of {counts['crds']} CRD(s): each at the storage version, pruned, defaulted and "
        f"valid by its schema, status only through /status, none after its CRD was gone; "
        f"{counts['requests_checked']} request(s) at a named version, none handled at a version its CRD did not serve"
    ), (), details)


def _load(value: str | None) -> dict[str, Any] | None:
    try:
        document = json.loads(value or "null")
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _trim(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key != "metadata"}


def _violation(rule: str, t: float, obj: str, problem: str, counts: dict[str, int], evidence: dict[str, Any]) -> Verdict:
    return Verdict(False, problem, ({"rule": rule, "t": t, "object": obj, "problem": problem, **evidence},), {"rule": rule, **counts})

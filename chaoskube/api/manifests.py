"""Kubernetes YAML manifests in, typed objects out; and back, as YAML or as stored JSON.

Contract:

- :func:`load_manifests` reads a file, or every ``*.yaml``/``*.yml``/``*.json`` file of a
  directory in name order (``recursive=True`` descends, as ``kubectl -R`` does). Each file
  is a YAML stream of documents; CRLF line endings, a byte-order mark, comment-only and
  empty documents are fine. A document whose kind ends in ``List`` with ``items`` (``kind:
  List``) is expanded into its items, as kubectl does.
- Documents are numbered from 1 in stream order, counting empty documents too, so the
  number is the one a reader finds by counting ``---`` separators.
- Every failure is a :class:`ManifestError`, whose ``str()`` is one line naming the file,
  the document and the field or kind. Nothing else escapes, whatever the input (a
  Hypothesis test holds us to it).
- Duplicate mapping keys are an error by default, as with kubectl's default
  ``--validate=strict`` (its strict YAML decoding says ``key "selector" already set in
  map``). ``duplicate_keys="last-wins"`` keeps the last value instead, as ``kubectl
  --validate=false`` and PyYAML do.
- YAML ``null`` means "unset", as in Go's JSON decoding: ``annotations:`` with nothing
  after it is the same as no annotations. Timestamps stay strings (YAML 1.1's implicit
  timestamp type is not applied, as sigs.k8s.io/yaml converts YAML to JSON first).
- Unsupported kinds and removed API versions are errors; with ``skip_unsupported=True``
  they are returned as :class:`ManifestIssue` values instead, and the supported objects are
  returned beside them. Malformed documents of a supported kind are errors either way:
  skipping them silently would hide a broken workload.

Non-guarantees: no server-side defaulting or validation beyond what objects.py checks; a
namespaced object without ``metadata.namespace`` keeps an empty namespace (kubectl would
fill in the context's namespace; :func:`chaoskube.api.objects.registry_key` uses "default").
"""

from __future__ import annotations

import base64
import datetime
import math
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any, Literal, overload

import msgspec
import yaml

from chaoskube.api.files import MANIFEST_MAX_BYTES, MANIFESTS_TOTAL_MAX_BYTES, TooLarge, human_bytes, read_limited
from chaoskube.api.objects import KINDS, REVIEWS, CustomObject, CustomResourceDefinition, Object, Scale, custom_kinds, validate_name

__all__ = [
    "ManifestError",
    "ManifestIssue",
    "dump_manifest",
    "dump_manifests",
    "from_dict",
    "from_json",
    "load_manifests",
    "load_yaml_value",
    "parse_manifests",
    "to_dict",
    "to_json",
]

DuplicateKeys = Literal["error", "last-wins"]

#: Bounds on one document, so that a hostile or broken file fails with a message instead of
#: exhausting memory or the stack: nesting depth, and values after YAML aliases are
#: expanded ("billion laughs"). Real manifests nest about 12 deep and hold a few thousand values.
MAX_DEPTH = 100
#: libyaml's bound on nesting (``YAML_MAX_NESTING_LEVEL``, checked by its scanner since
#: libyaml 0.2.6, which PyYAML 6.0.4's wheels bundle): deeper input fails there first.
LIBYAML_MAX_NESTING = 1000
MAX_VALUES = 1_000_000
_INT64 = (-(2**63), 2**63 - 1)

# (apiVersion, kind) -> (the release that stopped serving it, what to use instead).
# Source: https://kubernetes.io/docs/reference/using-api/deprecation-guide/ ; initializers:
# the Kubernetes 1.14 release notes (the alpha Initializers feature and its API were removed).
_REMOVED: dict[tuple[str, str], tuple[str, str]] = {}


def _removed(release: str, api_versions: tuple[str, ...], kinds: tuple[str, ...], replacement: str) -> None:
    for api_version in api_versions:
        for kind in kinds:
            _REMOVED[(api_version, kind)] = (release, replacement)


_removed("1.14", ("admissionregistration.k8s.io/v1alpha1",), ("InitializerConfiguration",), "no replacement (use admission webhooks)")
_removed("1.16", ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2"), ("Deployment", "ReplicaSet"), "use apps/v1")
_removed("1.16", ("extensions/v1beta1", "apps/v1beta2"), ("DaemonSet",), "use apps/v1")
_removed("1.16", ("apps/v1beta1", "apps/v1beta2"), ("StatefulSet",), "use apps/v1")
_removed("1.16", ("extensions/v1beta1",), ("NetworkPolicy",), "use networking.k8s.io/v1")
_removed("1.16", ("extensions/v1beta1",), ("PodSecurityPolicy",), "use policy/v1beta1 (itself removed in 1.25)")
_removed("1.22", ("extensions/v1beta1", "networking.k8s.io/v1beta1"), ("Ingress",), "use networking.k8s.io/v1")
_removed("1.22", ("networking.k8s.io/v1beta1",), ("IngressClass",), "use networking.k8s.io/v1")
_removed("1.22", ("admissionregistration.k8s.io/v1beta1",), ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"), "use admissionregistration.k8s.io/v1")
_removed("1.22", ("apiextensions.k8s.io/v1beta1",), ("CustomResourceDefinition",), "use apiextensions.k8s.io/v1")
_removed("1.22", ("apiregistration.k8s.io/v1beta1",), ("APIService",), "use apiregistration.k8s.io/v1")
_removed("1.22", ("certificates.k8s.io/v1beta1",), ("CertificateSigningRequest",), "use certificates.k8s.io/v1")
_removed("1.22", ("coordination.k8s.io/v1beta1",), ("Lease",), "use coordination.k8s.io/v1")
_removed("1.22", ("rbac.authorization.k8s.io/v1beta1",), ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"), "use rbac.authorization.k8s.io/v1")
_removed("1.22", ("scheduling.k8s.io/v1beta1",), ("PriorityClass",), "use scheduling.k8s.io/v1")
_removed("1.22", ("storage.k8s.io/v1beta1",), ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"), "use storage.k8s.io/v1")
_removed("1.25", ("batch/v1beta1",), ("CronJob",), "use batch/v1")
_removed("1.25", ("discovery.k8s.io/v1beta1",), ("EndpointSlice",), "use discovery.k8s.io/v1")
_removed("1.25", ("events.k8s.io/v1beta1",), ("Event",), "use events.k8s.io/v1")
_removed("1.25", ("autoscaling/v2beta1",), ("HorizontalPodAutoscaler",), "use autoscaling/v2")
_removed("1.25", ("policy/v1beta1",), ("PodDisruptionBudget",), "use policy/v1")
_removed("1.25", ("policy/v1beta1",), ("PodSecurityPolicy",), "no replacement (use Pod Security Admission)")
_removed("1.25", ("node.k8s.io/v1beta1",), ("RuntimeClass",), "use node.k8s.io/v1")
_removed("1.26", ("autoscaling/v2beta2",), ("HorizontalPodAutoscaler",), "use autoscaling/v2")


# =========================================================================== errors


def _where(source: str, document: int | None, item: int | None) -> str:
    where = source
    if document is not None:
        where += f": document {document}"
    if item is not None:
        where += f" item {item}" if document is not None else f": item {item}"
    return where


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ManifestError(Exception):
    """A manifest that cannot be loaded. ``str()`` is one line: file, document, field/kind.

    Attributes: ``source`` (the file name, or ``"<string>"``/``"<dict>"``), ``document``
    (1-based, or None), ``item`` (index in a ``List``, or None), ``kind`` (when known),
    ``field`` (dotted path, when the problem is one field) and ``reason``.
    """

    def __init__(self, source: str, reason: str, *, document: int | None = None, item: int | None = None, kind: str | None = None, name: str | None = None, field: str | None = None) -> None:
        self.source = source
        self.document = document
        self.item = item
        self.kind = kind
        self.field = field
        self.reason = _one_line(reason)
        where = _where(source, document, item)
        if kind and name:
            where += f" ({kind} {name})"
        elif kind:
            where += f" ({kind})"
        message = f"{where}: field `{field}`: {self.reason}" if field else f"{where}: {self.reason}"
        super().__init__(_one_line(message, limit=600))


@dataclass(frozen=True, slots=True)
class ManifestIssue:
    """A document skipped under ``skip_unsupported=True``: an unsupported kind or a removed
    API version. ``str()`` is the message :class:`ManifestError` would have carried."""

    source: str
    document: int | None
    item: int | None
    api_version: str
    kind: str
    reason: str

    def __str__(self) -> str:
        return f"{_where(self.source, self.document, self.item)}: {self.reason}"


class _Issue(Exception):
    """Internal: an unsupported kind or removed version, raised or collected by the caller."""

    def __init__(self, issue: ManifestIssue) -> None:
        super().__init__(str(issue))
        self.issue = issue


# =========================================================================== YAML


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader without YAML 1.1's implicit timestamps (kept as strings)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError):
        parts = [part for part in (error.context, error.problem) if part]
        text = ", ".join(parts) or "invalid YAML"
        mark = error.problem_mark or error.context_mark
        if mark is not None:
            text += f" (line {mark.line + 1}, column {mark.column + 1})"
        return f"not valid YAML: {text}"
    return f"not valid YAML: {error}"


def _check_duplicates(node: yaml.Node, path: str, depth: int, seen: set[int]) -> str | None:
    """The path of the first duplicate mapping key under ``node``, or None."""
    if id(node) in seen:  # an alias: checked where its anchor was
        return None
    seen.add(id(node))
    if depth > MAX_DEPTH:
        return None  # _plain reports the depth with a better message
    if isinstance(node, yaml.MappingNode):
        keys: set[tuple[str, str]] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key != "<<":
                if (key_node.tag, key) in keys:
                    return f"{path}.{key}" if path else key
                keys.add((key_node.tag, key))
            child = _check_duplicates(value_node, f"{path}.{key}" if path else str(key), depth + 1, seen)
            if child:
                return child
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = _check_duplicates(item, f"{path}[{index}]", depth + 1, seen)
            if child:
                return child
    return None


class _Budget:
    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values = 0


def _plain(value: Any, path: str, depth: int, budget: _Budget, keep_null: bool = False) -> Any:
    """The JSON value kubectl would send: string keys, no nulls in mappings (unless
    ``keep_null``), finite numbers.

    Raises ValueError naming the field for what JSON cannot hold.
    """
    budget.values += 1
    if budget.values > MAX_VALUES:
        raise ValueError(f"field `{path or '(top level)'}`: more than {MAX_VALUES} values after expanding YAML aliases")
    if depth > MAX_DEPTH:
        raise ValueError(f"field `{path}`: nested more than {MAX_DEPTH} deep (or a recursive YAML alias)")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, bool):
                key = "true" if key else "false"
            elif key is None:
                key = "null"
            elif not isinstance(key, str):
                key = str(key)
            if item is not None or keep_null:
                out[key] = _plain(item, f"{path}.{key}" if path else key, depth + 1, budget, keep_null)
        return out
    if isinstance(value, list):
        return [_plain(item, f"{path}[{index}]", depth + 1, budget, keep_null) for index, item in enumerate(value)]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"field `{path}`: integer {value} does not fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"field `{path}`: {value} is not a JSON number")
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise ValueError(f"field `{path or '(top level)'}`: a value of type {type(value).__name__} has no JSON form")


# =========================================================================== decoding


def _msgspec_message(error: msgspec.ValidationError) -> tuple[str, str]:
    """(field path, reason) from "Expected `int`, got `str` - at `$.spec.replicas`"."""
    message = str(error)
    text, sep, where = message.rpartition(" - at `")
    prefix = where.rstrip("`").removeprefix("$").removeprefix(".") if sep else ""
    if not sep:
        text = message
    if text.startswith("Object contains unknown field `"):
        name = text.split("`")[1]
        return (f"{prefix}.{name}" if prefix else name), "unknown field (misspelt, or not modelled; see docs/api-objects.md)"
    if text.startswith("Object missing required field `"):
        name = text.split("`")[1]
        return (f"{prefix}.{name}" if prefix else name), "missing (it is required)"
    if text.startswith("field `"):  # raised by a __post_init__ in objects.py
        name, _, reason = text.removeprefix("field `").partition("`: ")
        return (f"{prefix}.{name}" if prefix else name), reason
    if text.startswith("Expected `"):
        # "Expected `int | null`": null is how an absent optional field is spelt; say "int".
        text = "expected " + text.removeprefix("Expected ").replace("`", "").replace(" | null,", ",")
    return prefix or "(top level)", text


#: (apiVersion, kind) -> the CustomObject type of a custom kind (see objects.custom_kinds).
CustomKinds = Mapping[tuple[str, str], type]


@dataclass(frozen=True, slots=True)
class _Entry:
    """One object's document (a List's item is an entry of its own): where it is and its
    plain JSON value, ``apiVersion`` and ``kind`` checked to be strings."""

    source: str
    document: int | None
    item: int | None
    data: dict[str, Any]

    @property
    def api_version(self) -> str:
        return self.data["apiVersion"]

    @property
    def kind(self) -> str:
        return self.data["kind"]


def _flatten(data: Any, source: str, document: int | None, item: int | None, out: list[_Entry], depth: int = 0) -> None:
    """Append the object document(s) of ``data`` to ``out`` (a ``List`` gives its items)."""

    def fail(reason: str, *, field: str | None = None, kind: str | None = None) -> ManifestError:
        return ManifestError(source, reason, document=document, item=item, kind=kind, field=field)

    if not isinstance(data, dict):
        kind_of = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}.get(type(data), type(data).__name__)
        raise fail(f"expected a mapping with apiVersion and kind, got {kind_of}")
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    for field, value in (("apiVersion", api_version), ("kind", kind)):
        if value is None or value == "":
            raise fail("missing (every object needs apiVersion and kind)", field=field)
        if not isinstance(value, str):
            raise fail(f"must be a string, not {type(value).__name__}", field=field)
    assert isinstance(api_version, str) and isinstance(kind, str)
    if kind.endswith("List") and "items" in data:
        items = data["items"]
        if not isinstance(items, list):
            raise fail("must be a list", field="items", kind=kind)
        if depth >= 8:
            raise fail("lists nested more than 8 deep", field="items", kind=kind)
        for index, entry in enumerate(items):
            # Items of nested lists are numbered within their own list.
            _flatten(entry, source, document, index + 1 if depth == 0 else item, out, depth + 1)
        return
    out.append(_Entry(source, document, item, data))


#: Groups whose kinds Kubernetes serves itself (``kubectl api-resources`` of a 1.30
#: cluster): a kind of another group needs its CustomResourceDefinition.
BUILT_IN_GROUPS = frozenset({
    "", "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "apps", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io", "coordination.k8s.io", "discovery.k8s.io",
    "events.k8s.io", "extensions", "flowcontrol.apiserver.k8s.io", "internal.apiserver.k8s.io", "networking.k8s.io",
    "node.k8s.io", "policy", "rbac.authorization.k8s.io", "resource.k8s.io", "scheduling.k8s.io", "storage.k8s.io",
    "storagemigration.k8s.io",
})

#: Built-in kinds chaoskube does not serve, and why (what a user's manifests may hold).
NOT_SIMULATED: dict[str, str] = {
    "APIService": "aggregated API servers are not simulated",
    "CSIDriver": "CSI drivers are not simulated (volumes are provisioned by the simulated provisioner)",
    "CSINode": "CSI drivers are not simulated",
    "CertificateSigningRequest": "certificate signing is not simulated",
    "Event": "events are not recorded by the simulated components",
    "FlowSchema": "API Priority and Fairness is not simulated",
    "PriorityLevelConfiguration": "API Priority and Fairness is not simulated",
    "PodTemplate": "stand-alone PodTemplates have no controller",
    "RuntimeClass": "the simulated runtime has one handler",
    "ValidatingAdmissionPolicy": "CEL admission policies are not simulated",
    "ValidatingAdmissionPolicyBinding": "CEL admission policies are not simulated",
    "VolumeAttachment": "volume attachment is not simulated",
}


def _unsupported(entry: _Entry) -> _Issue:
    api_version, kind = entry.api_version, entry.kind
    info = KINDS.get(kind)
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    if (api_version, kind) in _REMOVED:
        release, replacement = _REMOVED[(api_version, kind)]
        reason = f"kind {kind} in apiVersion {api_version} was removed in Kubernetes {release}; {replacement}"
    elif info is not None:
        reason = f"kind {kind} in apiVersion {api_version} is not served; use {info.api_version}"
    elif kind in NOT_SIMULATED:
        reason = f"kind {kind} is not supported: {NOT_SIMULATED[kind]}"
    elif group not in BUILT_IN_GROUPS:
        # kubectl's words: `no matches for kind "X" in version "g/v"` + "ensure CRDs are installed first"
        reason = f'no matches for kind "{_one_line(kind, 80)}" in version "{_one_line(api_version, 80)}": ensure CRDs are installed first (no CustomResourceDefinition in these manifests serves it)'
    else:
        reason = f"kind {_one_line(kind, 80)} is not supported (supported: {', '.join(KINDS)}, and the kinds of CustomResourceDefinitions)"
    return _Issue(ManifestIssue(source=entry.source, document=entry.document, item=entry.item, api_version=api_version, kind=kind, reason=reason))


def _decode_entry(entry: _Entry, custom: CustomKinds) -> Object:
    """The object of one entry; raises ManifestError, or _Issue for an unsupported kind."""
    source, document, item, data = entry.source, entry.document, entry.item, entry.data
    api_version, kind = entry.api_version, entry.kind

    def fail(reason: str, *, field: str | None = None, kind: str | None = None, name: str | None = None) -> ManifestError:
        return ManifestError(source, reason, document=document, item=item, kind=kind, name=name, field=field)

    info = KINDS.get(kind)
    custom_type = custom.get((api_version, kind))
    if custom_type is None and (info is None or info.api_version != api_version):
        raise _unsupported(entry)
    body = {key: value for key, value in data.items() if key not in ("apiVersion", "kind")}
    metadata = body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) and isinstance(metadata.get("name"), str) else None
    try:
        if custom_type is not None:
            obj = msgspec.convert({"metadata": metadata if metadata is not None else {}, "content": {key: value for key, value in body.items() if key != "metadata"}}, custom_type)
        else:
            obj = msgspec.convert(body, info.type)
    except msgspec.ValidationError as error:
        field, reason = _msgspec_message(error)
        raise fail(reason, field=field, kind=kind, name=name) from None
    name_rule = info.name_rule if custom_type is None else "subdomain"
    meta = obj.metadata
    if meta.name:
        problem = validate_name(name_rule, meta.name)
        if problem:
            raise fail(f"{meta.name!r} {problem}", field="metadata.name", kind=kind)
    elif meta.generate_name:
        problem = validate_name(name_rule, meta.generate_name + "x")
        if problem:
            raise fail(f"{meta.generate_name!r} {problem}", field="metadata.generateName", kind=kind)
    else:
        raise fail("missing (every object needs a name, or a generateName)", field="metadata.name", kind=kind)
    if meta.namespace:
        problem = validate_name("label", meta.namespace)
        if problem:
            raise fail(f"{meta.namespace!r} {problem}", field="metadata.namespace", kind=kind, name=meta.name)
    return obj


def _decode_entries(entries: list[_Entry], custom: CustomKinds, *, skip_unsupported: bool) -> tuple[list[Object], list[ManifestIssue]]:
    """Decode every entry in order. The CustomResourceDefinitions among them are decoded
    first: their kinds are served to the other entries, whatever their order (kubectl
    applies the CRDs of a set first for the same reason)."""
    crds = {}
    for index, entry in enumerate(entries):
        if entry.kind == "CustomResourceDefinition" and entry.api_version == CustomResourceDefinition.API_VERSION:
            crds[index] = _decode_entry(entry, {})
    served = {**custom, **custom_kinds(list(crds.values()))}
    objects: list[Object] = []
    issues: list[ManifestIssue] = []
    for index, entry in enumerate(entries):
        if index in crds:
            objects.append(crds[index])
            continue
        try:
            objects.append(_decode_entry(entry, served))
        except _Issue as issue:
            if not skip_unsupported:
                raise ManifestError(entry.source, issue.issue.reason, document=entry.document, item=entry.item) from None
            issues.append(issue.issue)
    return objects, issues


def _decode(data: Any, source: str, document: int | None, item: int | None, out: list[Object], custom: CustomKinds = {}) -> None:  # noqa: B006 - read only
    """Append the object(s) in one document to ``out``; raise ManifestError or _Issue."""
    entries: list[_Entry] = []
    _flatten(data, source, document, item, entries)
    for entry in entries:
        out.append(_decode_entry(entry, custom))


def _check_syntax(text: str, source: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Parse the stream once as events: syntax errors and nesting depth, per document.

    libyaml's parser keeps its own stack, but PyYAML's C composer recurses on the C stack and
    crashes the interpreter on deeply nested input ("[" * 100000); so bound the depth here,
    before anything composes a node tree.
    """
    document = 0
    depth = 0

    def too_deep(mark: Any) -> ManifestError:
        line = mark.line + 1 if mark is not None else "?"
        return ManifestError(source, f"nested more than {max_depth} deep (line {line})", document=max(document, 1))

    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.DocumentStartEvent):
                document += 1
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > max_depth:
                    raise too_deep(event.start_mark)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as error:
        if max_depth < LIBYAML_MAX_NESTING and "exceeded maximum nesting depth" in str(getattr(error, "problem", "")):
            # libyaml's own bound (PyYAML >= 6.0.4 bundles it), met while its scanner looks
            # ahead for a simple key, before the parser hands over the event past ours.
            raise too_deep(getattr(error, "problem_mark", None)) from None
        raise ManifestError(source, _yaml_problem(error), document=max(document, 1)) from None
    except (RecursionError, ValueError, TypeError, OverflowError) as error:
        raise ManifestError(source, f"not valid YAML: {type(error).__name__}: {error}", document=max(document, 1)) from None


def _entries(text: str, source: str, *, duplicate_keys: DuplicateKeys) -> list[_Entry]:
    """The object documents of a YAML stream, in order (a List's items each)."""
    assert duplicate_keys in ("error", "last-wins"), duplicate_keys
    _check_syntax(text, source)
    entries: list[_Entry] = []
    document = 0
    loader = _Loader(text)
    try:
        while True:
            failing = document + 1  # a parse error belongs to the document being read
            try:
                if not loader.check_node():
                    break
                node = loader.get_node()
                document = failing
                if duplicate_keys == "error":
                    duplicate = _check_duplicates(node, "", 0, set())
                    if duplicate:
                        raise ManifestError(source, "duplicate key (kubectl --validate=strict rejects it; load with duplicate_keys='last-wins' to keep the last value)", document=document, field=duplicate)
                data = loader.construct_document(node)
            except yaml.YAMLError as error:
                raise ManifestError(source, _yaml_problem(error), document=failing) from None
            except (RecursionError, ValueError, TypeError, OverflowError) as error:
                # PyYAML's own limits (deep nesting, odd scalars like ".inf" in an int tag).
                raise ManifestError(source, f"not valid YAML: {type(error).__name__}: {error}", document=failing) from None
            if data is None:
                continue  # an empty or comment-only document
            try:
                data = _plain(data, "", 0, _Budget())
            except ValueError as error:
                field, _, reason = str(error).removeprefix("field `").partition("`: ")
                raise ManifestError(source, reason, document=document, field=field) from None
            _flatten(data, source, document, None, entries)
    finally:
        loader.dispose()
    return entries


def _text(text: str | bytes, source: str) -> str:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ManifestError(source, f"not UTF-8 text (byte {error.start})") from None
    return text.removeprefix("\ufeff")


@overload
def parse_manifests(text: str | bytes, source: str = ..., *, skip_unsupported: Literal[False] = ..., duplicate_keys: DuplicateKeys = ..., custom: CustomKinds | None = ...) -> list[Object]: ...
@overload
def parse_manifests(text: str | bytes, source: str = ..., *, skip_unsupported: Literal[True], duplicate_keys: DuplicateKeys = ..., custom: CustomKinds | None = ...) -> tuple[list[Object], list[ManifestIssue]]: ...
def parse_manifests(text: str | bytes, source: str = "<string>", *, skip_unsupported: bool = False, duplicate_keys: DuplicateKeys = "error", custom: CustomKinds | None = None) -> Any:
    """The objects in a YAML stream; ``source`` names it in errors. See the module docstring.
    ``custom`` adds custom kinds served beside those of the stream's own CRDs."""
    entries = _entries(_text(text, source), source, duplicate_keys=duplicate_keys)
    objects, issues = _decode_entries(entries, custom or {}, skip_unsupported=skip_unsupported)
    return (objects, issues) if skip_unsupported else objects


def load_yaml_value(text: str | bytes, source: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The one YAML document of ``text`` as a JSON value, read with the same guards as a
    manifest: syntax and nesting depth checked before anything is composed, duplicate
    mapping keys refused (the ``field`` of the error names the path), aliases bounded, no
    implicit timestamps; ``null`` stays ``None`` (in an experiment file it can be a value:
    a step argument, an unbounded duration). An empty document gives None. Every failure is a :class:`ManifestError` (one line); more than one
    document is one too. For files that are not manifests (experiment files)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ManifestError(source, f"not UTF-8 text (byte {error.start})") from None
    text = text.removeprefix("\ufeff")
    _check_syntax(text, source, max_depth=max_depth)
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.composer.ComposerError as error:
            if "but found another document" in str(error):
                raise ManifestError(source, "holds more than one YAML document (`---`); give one") from None
            raise ManifestError(source, _yaml_problem(error)) from None
        except yaml.YAMLError as error:
            raise ManifestError(source, _yaml_problem(error)) from None
        if node is None:
            return None
        duplicate = _check_duplicates(node, "", 0, set())
        if duplicate:
            raise ManifestError(source, "duplicate key (each key once: YAML keeps only the last value)", field=duplicate)
        try:
            data = loader.construct_document(node)
        except yaml.YAMLError as error:
            raise ManifestError(source, _yaml_problem(error)) from None
        except (RecursionError, ValueError, TypeError, OverflowError) as error:
            raise ManifestError(source, f"not valid YAML: {type(error).__name__}: {error}") from None
    finally:
        loader.dispose()
    try:
        return _plain(data, "", 0, _Budget(), keep_null=True)
    except ValueError as error:
        field, _, reason = str(error).removeprefix("field `").partition("`: ")
        raise ManifestError(source, reason, field=field) from None


def _files(path: Path, recursive: bool) -> list[Path]:
    if not path.is_dir():
        return [path]
    pattern = "**/*" if recursive else "*"
    return sorted(file for file in path.glob(pattern) if file.is_file() and file.suffix in (".yaml", ".yml", ".json"))


@overload
def load_manifests(path: str | Path | Sequence[str | Path], *, skip_unsupported: Literal[False] = ..., duplicate_keys: DuplicateKeys = ..., recursive: bool = ..., custom: CustomKinds | None = ...) -> list[Object]: ...
@overload
def load_manifests(path: str | Path | Sequence[str | Path], *, skip_unsupported: Literal[True], duplicate_keys: DuplicateKeys = ..., recursive: bool = ..., custom: CustomKinds | None = ...) -> tuple[list[Object], list[ManifestIssue]]: ...
def load_manifests(path: str | Path | Sequence[str | Path], *, skip_unsupported: bool = False, duplicate_keys: DuplicateKeys = "error", recursive: bool = False, custom: CustomKinds | None = None) -> Any:
    """The objects in a manifest file, or in the manifest files of a directory, in order;
    or of several files and directories (a list), in order, as one set.

    With ``skip_unsupported=True``, returns ``(objects, issues)``: unsupported kinds and
    removed API versions become :class:`ManifestIssue` values instead of errors. The
    CustomResourceDefinitions of every file serve their kinds to every file.
    """
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(item) for item in path]
    entries: list[_Entry] = []
    total = 0
    for file in (file for item in paths for file in _files(item, recursive)):
        try:
            data = read_limited(file, MANIFEST_MAX_BYTES, "a manifest file (split a larger workload into several files)")
        except TooLarge as error:
            raise ManifestError(str(file), str(error).removeprefix(f"{file}: ")) from None
        except OSError as error:
            raise ManifestError(str(file), f"cannot read: {error.strerror or error}") from None
        total += len(data)
        if total > MANIFESTS_TOTAL_MAX_BYTES:
            raise ManifestError(str(file), f"the manifests read so far are larger than {human_bytes(MANIFESTS_TOTAL_MAX_BYTES)} in all, the most chaoskube reads for one workload")
        entries.extend(_entries(_text(data, str(file)), str(file), duplicate_keys=duplicate_keys))
    objects, issues = _decode_entries(entries, custom or {}, skip_unsupported=skip_unsupported)
    return (objects, issues) if skip_unsupported else objects


# =========================================================================== encoding

_FIELD_DEFAULTS: dict[type, tuple[tuple[str, str, Any], ...]] = {}
_REQUIRED = object()


def _field_defaults(cls: type) -> tuple[tuple[str, str, Any], ...]:
    """(attribute, JSON name, default value or _REQUIRED) per field, cached per class."""
    cached = _FIELD_DEFAULTS.get(cls)
    if cached is None:
        entries = []
        for field in msgspec.structs.fields(cls):
            if field.default is not msgspec.NODEFAULT:
                default = field.default
            elif field.default_factory is not msgspec.NODEFAULT:
                default = field.default_factory()
            else:
                default = _REQUIRED
            entries.append((field.name, field.encode_name, default))
        cached = _FIELD_DEFAULTS[cls] = tuple(entries)
    return cached


#: Values :func:`_builtin` returns as they are (exact types: a subclass takes the long way).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _builtin(value: Any) -> Any:
    # Scalars are taken as they are without a recursive call (most values are scalars:
    # this halves the calls of a Pod's to_dict).
    scalars = _SCALARS
    if isinstance(value, msgspec.Struct):
        out = {}
        for attribute, json_name, default in _field_defaults(type(value)):
            item = getattr(value, attribute)
            kind = type(item)
            # Omit what equals the default, struct defaults too (msgspec's omit_defaults
            # cannot compare a default_factory): a round trip must not invent `status: {}`.
            if default is not _REQUIRED and kind is type(default) and item == default:
                continue
            out[json_name] = item if kind in scalars else _builtin(item)
        return out
    if isinstance(value, dict):
        return {key: item if type(item) in scalars else _builtin(item) for key, item in value.items()}
    if isinstance(value, list):
        return [item if type(item) in scalars else _builtin(item) for item in value]
    return value


def to_dict(obj: Object) -> dict[str, Any]:
    """The object as Kubernetes JSON (apiVersion and kind first); shares nothing with ``obj``.
    A custom object's ``content`` is spread at the top level, after ``metadata``."""
    if isinstance(obj, CustomObject):
        out: dict[str, Any] = {"apiVersion": obj.API_VERSION, "kind": obj.KIND, "metadata": _builtin(obj.metadata)}
        out.update(_builtin(obj.content))
        return out
    assert (type(obj).__name__ in KINDS and KINDS[type(obj).__name__].type is type(obj)) or isinstance(obj, Scale) or REVIEWS.get(obj.RESOURCE, None) is not None, type(obj)
    return {"apiVersion": obj.API_VERSION, "kind": obj.KIND, **_builtin(obj)}


def from_dict(data: Any, source: str = "<dict>", *, custom: CustomKinds | None = None) -> Object:
    """The object in Kubernetes JSON form; raises ManifestError (unsupported kinds too).
    ``custom`` serves custom kinds (:func:`chaoskube.api.objects.custom_kinds`)."""
    try:
        plain = _plain(data, "", 0, _Budget())
    except ValueError as error:
        field, _, reason = str(error).removeprefix("field `").partition("`: ")
        raise ManifestError(source, reason, field=field) from None
    if isinstance(plain, dict) and isinstance(plain.get("kind"), str) and plain["kind"].endswith("List") and "items" in plain:
        raise ManifestError(source, f"expected one object, got a {_one_line(plain['kind'], 80)}")
    out: list[Object] = []
    try:
        _decode(plain, source, None, None, out, custom or {})
    except _Issue as issue:
        raise ManifestError(source, issue.issue.reason) from None
    assert len(out) == 1, out
    return out[0]


def to_json(obj: Object) -> bytes:
    """The object as stored under /registry: compact JSON, fields in Kubernetes order."""
    return msgspec.json.encode(to_dict(obj))


def from_json(data: bytes | str, source: str = "<json>", *, custom: CustomKinds | None = None) -> Object:
    """Inverse of :func:`to_json`; raises ManifestError."""
    try:
        decoded = msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise ManifestError(source, f"not valid JSON: {error}") from None
    return from_dict(decoded, source, custom=custom)


def dump_manifest(obj: Object) -> str:
    """The object as one YAML document (block style, Kubernetes field order)."""
    dumper = yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper
    return yaml.dump(to_dict(obj), Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=2**31 - 1)


def dump_manifests(objects: list[Object]) -> str:
    """The objects as one multi-document YAML stream."""
    return "---\n".join(dump_manifest(obj) for obj in objects)

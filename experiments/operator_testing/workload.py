"""The workload of an operator test: what a user does to the operator's custom resources,
as with kubectl -- create, update (a merge patch), delete, wait -- given as a YAML list, or
generated from the CRD's OpenAPI schema as Acto does (Gu et al., "Acto: Automatic
End-to-End Testing for Operation Correctness of Cloud System Management", SOSP 2023, §4:
state transitions of the custom resource, one field at a time).

A workload file::

    - create: {apiVersion: demo.chaoskube.dev/v1, kind: Widget, metadata: {name: w1}, spec: {replicas: 2}}
    - update: {kind: Widget, name: w1, patch: {spec: {replicas: 3}}}
    - wait: 2            # seconds (virtual), beside the automatic wait for quiescence
    - delete: {kind: Widget, name: w1}

Each step is followed by a wait until the operator is quiet (no write of its own, no store
change) for the session's quiet period. Pure: :func:`load_workload` parses and checks,
:func:`generate_workload` draws nothing at random (the same CRD gives the same steps).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Step", "WorkloadError", "dump_workload", "generate_workload", "load_workload", "step_from_json"]

ACTIONS = ("create", "update", "delete", "wait")
#: The most field changes a generated workload makes (one step each).
MAX_GENERATED_CHANGES = 8


class WorkloadError(ValueError):
    """A bad workload file: the message names the file, the step and the field."""


@dataclass(frozen=True)
class Step:
    action: str  # create | update | delete | wait
    kind: str = ""
    name: str = ""
    namespace: str = "default"
    body: dict[str, Any] = field(default_factory=dict)  # create: the object; update: the merge patch
    seconds: float = 0.0  # wait

    def describe(self) -> str:
        if self.action == "wait":
            return f"wait {self.seconds:g} s"
        if self.action == "update":
            return f"update {self.kind} {self.namespace}/{self.name} {_flat(self.body)}"
        return f"{self.action} {self.kind} {self.namespace}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "kind": self.kind, "name": self.name, "namespace": self.namespace, "body": self.body, "seconds": self.seconds}


def step_from_json(data: dict[str, Any]) -> Step:
    return Step(str(data["action"]), str(data.get("kind", "")), str(data.get("name", "")), str(data.get("namespace", "default")), dict(data.get("body") or {}), float(data.get("seconds", 0.0)))


def _flat(patch: Any, prefix: str = "") -> str:
    if isinstance(patch, dict) and patch:
        return ", ".join(_flat(value, f"{prefix}.{key}" if prefix else str(key)) for key, value in patch.items())
    return f"{prefix}={patch!r}"


def load_workload(path: str | Path, kinds: set[str]) -> list[Step]:
    """Parse a workload file; ``kinds``: the custom kinds the CRDs define (a step naming
    another kind is refused). Raises :class:`WorkloadError` with one line."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise WorkloadError(f"{path}: cannot read the workload ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); give a YAML list of steps") from None
    if not isinstance(data, list) or not data:
        raise WorkloadError(f"{path}: a workload is a non-empty YAML list of steps (create / update / delete / wait)")
    steps = []
    for index, entry in enumerate(data):
        where = f"{path}: step {index + 1}"
        if not isinstance(entry, dict) or len(entry) != 1 or next(iter(entry)) not in ACTIONS:
            raise WorkloadError(f"{where}: give exactly one of {', '.join(ACTIONS)} (e.g. `- delete: {{kind: Widget, name: w1}}`)")
        action, value = next(iter(entry.items()))
        if action == "wait":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 600:
                raise WorkloadError(f"{where}: wait: give seconds between 0 and 600, not {value!r}")
            steps.append(Step("wait", seconds=float(value)))
            continue
        if not isinstance(value, dict):
            raise WorkloadError(f"{where}: {action}: give a mapping")
        if action == "create":
            meta = value.get("metadata") or {}
            kind, name = value.get("kind"), meta.get("name") if isinstance(meta, dict) else None
            if not value.get("apiVersion") or not kind or not name:
                raise WorkloadError(f"{where}: create: the object needs apiVersion, kind and metadata.name")
            namespace = str(meta.get("namespace") or "default")
            body = copy.deepcopy(value)
        else:
            kind, name = value.get("kind"), value.get("name")
            if not kind or not name:
                raise WorkloadError(f"{where}: {action}: give kind and name (e.g. `{{kind: Widget, name: w1}}`)")
            namespace = str(value.get("namespace") or "default")
            body = {}
            if action == "update":
                body = value.get("patch")
                if not isinstance(body, dict) or not body:
                    raise WorkloadError(f"{where}: update: give patch, a merge patch (e.g. `patch: {{spec: {{replicas: 3}}}}`)")
        if kind not in kinds:
            raise WorkloadError(f"{where}: kind {kind!r} is not defined by the CRDs given (defined: {', '.join(sorted(kinds)) or 'none'})")
        steps.append(Step(action, str(kind), str(name), namespace, body))
    return steps


# ----------------------------------------------------------------------------- generation
def generate_workload(crd: dict[str, Any], *, name: str = "", namespace: str = "default", max_changes: int = MAX_GENERATED_CHANGES) -> list[Step]:
    """Acto's state transitions for one custom resource of ``crd``: create a valid object
    (every required field, and every field with a default or a bound, at a valid value),
    then change its spec one field at a time -- an integer up then down, a boolean toggled,
    an enum to its next value, a string changed ("image"-like ones to another tag) -- then
    delete it. At most ``max_changes`` changes, fields in schema order."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    kind = str(names.get("kind", ""))
    versions = [version for version in spec.get("versions") or () if version.get("served", True)]
    assert kind and versions, "a CRD with a kind and a served version"
    version = next((v for v in versions if v.get("storage")), versions[0])
    schema = ((version.get("schema") or {}).get("openAPIV3Schema") or {})
    spec_schema = (schema.get("properties") or {}).get("spec") or {"type": "object"}
    name = name or f"{kind.lower()}-1"
    body = {"apiVersion": f"{spec['group']}/{version['name']}", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": valid_value(spec_schema)}
    steps = [Step("create", kind, name, namespace, body)]
    current = copy.deepcopy(body["spec"])
    for path, new in field_changes(spec_schema, current)[:max_changes]:
        patch: dict[str, Any] = {}
        cursor = patch
        for key in path[:-1]:
            cursor = cursor.setdefault(key, {})
        cursor[path[-1]] = new
        steps.append(Step("update", kind, name, namespace, {"spec": patch}))
    steps.append(Step("delete", kind, name, namespace))
    return steps


def valid_value(schema: dict[str, Any]) -> Any:
    """A valid value of ``schema`` (its default, else the smallest valid one)."""
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required") or ())
        out = {}
        for key, sub in (schema.get("properties") or {}).items():
            if key in required or "default" in sub or sub.get("type") in ("integer", "boolean", "string") or sub.get("enum"):
                out[key] = valid_value(sub)
        return out
    if kind == "integer" or kind == "number":
        low = schema.get("minimum", 1)
        high = schema.get("maximum")
        value = max(low, 1) if high is None else min(max(low, 1), high)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "string":
        return _string_value(schema, "")
    if kind == "array":
        return []
    return None


def _string_value(schema: dict[str, Any], current: str) -> str:
    if "image" in str(schema.get("description", "")).lower() or ":" in current:
        base, _, tag = current.partition(":")
        return f"{base or 'busybox'}:{'1.36' if tag != '1.36' else '1.37'}"
    minimum = int(schema.get("minLength", 1))
    value = (current + "x") if current else "a"
    return value.ljust(minimum, "a")


def field_changes(schema: dict[str, Any], value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(path, new value) for each scalar field of ``schema`` under ``value``: Acto's
    one-field-at-a-time transitions (integers up then back down, booleans toggled, enums
    cycled, strings changed)."""
    out: list[tuple[tuple[str, ...], Any]] = []
    for key, sub in (schema.get("properties") or {}).items():
        here = path + (key,)
        current = value.get(key) if isinstance(value, dict) else None
        if current is None:
            current = valid_value(sub)
        if sub.get("enum"):
            options = list(sub["enum"])
            if len(options) > 1:
                index = options.index(current) if current in options else 0
                out.append((here, options[(index + 1) % len(options)]))
            continue
        kind = sub.get("type")
        if kind == "integer":
            high = sub.get("maximum")
            low = sub.get("minimum")
            up = current + 1 if high is None or current + 1 <= high else current
            if up != current:
                out.append((here, up))
            # Down again: back to where it was after going up (a scale-down that leaves the
            # others in place), else below it.
            down = current if up != current else current - 1
            if down != up and (low is None or down >= low) and down >= 0:
                out.append((here, down))
        elif kind == "boolean":
            out.append((here, not current))
        elif kind == "string":
            out.append((here, _string_value(sub, str(current))))
        elif kind == "object" or "properties" in sub:
            out.extend(field_changes(sub, current or {}, here))
    return out


def dump_workload(steps: list[Step]) -> str:
    """The workload file of ``steps`` (what :func:`load_workload` reads back), so a
    generated workload is written once and every session of a test -- and every replay --
    runs exactly it."""
    out: list[dict[str, Any]] = []
    for step in steps:
        if step.action == "wait":
            out.append({"wait": step.seconds})
        elif step.action == "create":
            out.append({"create": step.body})
        elif step.action == "update":
            out.append({"update": {"kind": step.kind, "name": step.name, "namespace": step.namespace, "patch": step.body}})
        else:
            out.append({"delete": {"kind": step.kind, "name": step.name, "namespace": step.namespace}})
    return yaml.safe_dump(out, sort_keys=False)

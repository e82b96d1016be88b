"""ControllerRevisions, as ``pkg/controller/history/controller_history.go`` keeps them for
StatefulSets and DaemonSets: a revision is an immutable snapshot of the pod template (the
patch the controllers apply, ``{"spec": {"template": {..., "$patch": "replace"}}}``), named
``<owner>-<hash>``, numbered from 1; pods carry the name of their revision in the
``controller-revision-hash`` label.

Pure helpers: :func:`revision_data`, :func:`hash_revision` (FNV-32a of the data and the
collision count, encoded with ``rand.SafeEncodeString``), :func:`next_revision_number`,
:func:`find_equal_revision`, :func:`revisions_to_truncate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from chaoskube.api.manifests import to_dict
from chaoskube.api.objects import ControllerRevision, ObjectMeta, OwnerReference

__all__ = [
    "CONTROLLER_REVISION_HASH_LABEL",
    "find_equal_revision",
    "hash_revision",
    "new_revision",
    "next_revision_number",
    "revision_data",
    "revision_name",
    "revisions_to_truncate",
    "safe_encode",
]

#: ``apps.ControllerRevisionHashLabelKey`` (also ``apps.StatefulSetRevisionLabel``).
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's alphabet


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each byte mapped into an alphabet without vowels."""
    return "".join(_ALPHANUMS[ord(char) % len(_ALPHANUMS)] for char in text)


def _fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def revision_data(owner: Any) -> dict[str, Any]:
    """``getPatch``: the template as a strategic merge patch that replaces it."""
    template = to_dict(owner)["spec"].get("template", {})
    return {"spec": {"template": {**template, "$patch": "replace"}}}


def hash_revision(data: dict[str, Any], collision_count: int | None) -> str:
    """``HashControllerRevision``: FNV-32a of the revision's data (plus the collision count)."""
    raw = msgspec.json.encode(data, order="sorted")
    if collision_count:
        raw += str(collision_count).encode()
    return safe_encode(str(_fnv32a(raw)))


def revision_name(prefix: str, hash_value: str) -> str:
    """``ControllerRevisionName``: ``<prefix>-<hash>``, the prefix cut to leave room."""
    if len(prefix) > 223:
        prefix = prefix[:223]
    return f"{prefix}-{hash_value}"


def next_revision_number(revisions: Iterable[ControllerRevision]) -> int:
    return max((revision.revision for revision in revisions), default=0) + 1


def find_equal_revision(revisions: Iterable[ControllerRevision], data: dict[str, Any]) -> ControllerRevision | None:
    """``FindEqualRevisions``: the newest revision with the same data, if any."""
    wanted = msgspec.json.encode(data, order="sorted")
    equal = [revision for revision in revisions if msgspec.json.encode(revision.data, order="sorted") == wanted]
    return max(equal, key=lambda revision: (revision.revision, revision.metadata.name)) if equal else None


def new_revision(owner: Any, data: dict[str, Any], number: int, collision_count: int | None, selector_labels: dict[str, str], reference: OwnerReference) -> ControllerRevision:
    """``NewControllerRevision``: labels from the owner's template (as upstream copies the
    template labels) plus the hash label."""
    hash_value = hash_revision(data, collision_count)
    labels = {**selector_labels, CONTROLLER_REVISION_HASH_LABEL: hash_value}
    meta = ObjectMeta(name=revision_name(owner.metadata.name, hash_value), namespace=owner.metadata.namespace, labels=labels, owner_references=[reference])
    return ControllerRevision(metadata=meta, data=data, revision=number)


def revisions_to_truncate(revisions: Sequence[ControllerRevision], live: set[str], limit: int) -> list[ControllerRevision]:
    """``truncateHistory``: the oldest revisions no live pod or status names, beyond
    ``revisionHistoryLimit``."""
    history = sorted((revision for revision in revisions if revision.metadata.name not in live), key=lambda revision: (revision.revision, revision.metadata.name))
    excess = len(history) - max(0, limit)
    return history[:excess] if excess > 0 else []

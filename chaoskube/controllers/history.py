"""ControllerRevisions, as ``pkg/controller/history/controller_history.go`` keeps them for
StatefulSets and DaemonSets: a revision is an immutable snapshot of the pod template (the
patch the controllers apply, ``{"spec": {"template": {..., "$patch": "replace"}}}``), named
``<owner>-<hash>``, numbered from 1; pods carry the name of their revision in the
``controller-revision-hash`` label.

Pure helpers: :func:`revision_data`, :func:`hash_revision` (FNV-32a of the data and the
collision count, encoded with ``rand.SafeEncodeString``), :func:`sort_revisions`
(``SortControllerRevisions``), :func:`next_revision_number`, :func:`find_equal_revisions`
(``FindEqualRevisions``), :func:`plan_update_revision` (``getStatefulSetRevisions``' choice:
reuse, renumber or create), :func:`revisions_to_truncate`.

A rollback renumbers: a template equal to an earlier revision that is not the latest reuses
that revision (its name, so its pods keep their ``controller-revision-hash``) and raises its
``revision`` to max+1 (``UpdateControllerRevision``), so the revision numbers keep telling
the order the templates were last applied in -- what ``kubectl rollout history`` shows and
what ``truncateHistory`` deletes first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from chaoskube.api.manifests import to_dict
from chaoskube.api.protocol import parse_timestamp
from chaoskube.api.objects import ControllerRevision, ObjectMeta, OwnerReference

__all__ = [
    "CONTROLLER_REVISION_HASH_LABEL",
    "find_equal_revisions",
    "hash_revision",
    "new_revision",
    "next_revision_number",
    "old_histories_to_clean",
    "plan_current_history",
    "plan_update_revision",
    "revision_data",
    "revision_name",
    "revisions_to_truncate",
    "safe_encode",
    "sort_revisions",
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


def _created(revision: ControllerRevision) -> float:
    stamp = revision.metadata.creation_timestamp
    return parse_timestamp(stamp) if stamp else 0.0


def sort_revisions(revisions: Iterable[ControllerRevision]) -> list[ControllerRevision]:
    """``SortControllerRevisions`` (``byRevision``, a stable sort): by ``revision``, ties
    broken by ``creationTimestamp``, then by name."""
    return sorted(revisions, key=lambda revision: (revision.revision, _created(revision), revision.metadata.name))


def next_revision_number(revisions: Iterable[ControllerRevision]) -> int:
    """``nextRevision``: one more than the highest ``revision``, 1 for no history."""
    return max((revision.revision for revision in revisions), default=0) + 1


def _encoded(data: Any) -> bytes:
    return msgspec.json.encode(data, order="sorted")


def find_equal_revisions(revisions: Iterable[ControllerRevision], data: dict[str, Any]) -> list[ControllerRevision]:
    """``FindEqualRevisions``: the revisions whose data equals ``data``, in the given order."""
    wanted = _encoded(data)
    return [revision for revision in revisions if _encoded(revision.data) == wanted]


def plan_update_revision(revisions: Sequence[ControllerRevision], data: dict[str, Any]) -> tuple[ControllerRevision | None, int]:
    """``getStatefulSetRevisions``' choice of the update revision, over the history sorted by
    :func:`sort_revisions`: ``(latest, its number)`` when the latest revision already holds
    ``data`` (the template did not change); ``(equal, max + 1)`` when an earlier revision
    holds it -- a rollback, which ``UpdateControllerRevision`` renumbers to ``nextRevision``
    (the caller writes the new number when it differs); ``(None, max + 1)`` when none does
    (the caller creates one with that number)."""
    ordered = sort_revisions(revisions)
    number = next_revision_number(ordered)
    equal = find_equal_revisions(ordered, data)
    if not equal:
        return None, number
    if equal[-1] is ordered[-1]:  # the latest holds data (upstream compares their data: the same test)
        return ordered[-1], ordered[-1].revision
    return equal[-1], number


def new_revision(owner: Any, data: dict[str, Any], number: int, collision_count: int | None, selector_labels: dict[str, str], reference: OwnerReference) -> ControllerRevision:
    """``NewControllerRevision``: labels from the owner's template (as upstream copies the
    template labels) plus the hash label."""
    hash_value = hash_revision(data, collision_count)
    labels = {**selector_labels, CONTROLLER_REVISION_HASH_LABEL: hash_value}
    meta = ObjectMeta(name=revision_name(owner.metadata.name, hash_value), namespace=owner.metadata.namespace, labels=labels, owner_references=[reference])
    return ControllerRevision(metadata=meta, data=data, revision=number)


def plan_current_history(revisions: Iterable[ControllerRevision], data: dict[str, Any]) -> tuple[ControllerRevision | None, int]:
    """The DaemonSet controller's ``constructHistory`` (``pkg/controller/daemon/update.go``):
    the revisions holding ``data`` are current, the others old; ``currRevision`` is the
    highest old number + 1. ``(None, currRevision)`` when none is current (the caller
    creates it, ``snapshot``); else the current one ``dedupCurHistories`` keeps (the highest
    number, the last of equals) and the number it must have: ``currRevision`` when it is
    below that (a rollback to an earlier template; the caller updates it), else its own."""
    wanted = _encoded(data)
    ordered = sort_revisions(revisions)
    current = [revision for revision in ordered if _encoded(revision.data) == wanted]
    number = max((revision.revision for revision in ordered if _encoded(revision.data) != wanted), default=0) + 1
    if not current:
        return None, number
    keep = current[-1]
    return keep, max(keep.revision, number)


def old_histories_to_clean(revisions: Iterable[ControllerRevision], data: dict[str, Any], live_hashes: set[str], limit: int) -> list[ControllerRevision]:
    """The DaemonSet controller's ``cleanupHistory`` (``pkg/controller/daemon/update.go``):
    of the old revisions (not holding ``data``), ``len(old) - revisionHistoryLimit`` are
    deleted, oldest first, skipping those whose hash label a pod of the set still carries
    (a skipped one does not count: a newer one goes in its place, if any)."""
    wanted = _encoded(data)
    old = [revision for revision in sort_revisions(revisions) if _encoded(revision.data) != wanted]
    to_kill = len(old) - limit
    doomed: list[ControllerRevision] = []
    for revision in old:
        if to_kill <= 0:
            break
        if revision.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL, "") in live_hashes:
            continue
        doomed.append(revision)
        to_kill -= 1
    return doomed


def revisions_to_truncate(revisions: Sequence[ControllerRevision], live: set[str], limit: int) -> list[ControllerRevision]:
    """``truncateHistory``: the oldest revisions no live pod or status names, beyond
    ``revisionHistoryLimit``."""
    history = sort_revisions(revision for revision in revisions if revision.metadata.name not in live)
    excess = len(history) - max(0, limit)
    return history[:excess] if excess > 0 else []

"""The learned mask: what differs between two fault-free runs of the same operator and
workload anyway, so that it is never reported as a finding (Sieve, OSDI 2022, §5.2: "the
differences between two reference runs are masked"; Acto, SOSP 2023, §5: fields whose values
are not deterministic).

Two fault-free sessions are compared at every checkpoint (after each workload step
quiesced) and at the end, and in each object's creations and deletions. What differs is
masked:

- a field path, per resource (``widgets.gallery.chaoskube.dev .metadata.annotations.x``):
  list indices generalized (``[*]``), so a timestamp in one widget's annotation is masked in
  every widget's;
- an object, when it is present in one run and not in the other at some checkpoint (a name
  drawn at random with no ``generateName``);
- an object's lifecycle (how often it was created and deleted), when the two runs disagree.

Before this, the normalization of :mod:`.observe` has already dropped uids,
resourceVersions, timestamps and managedFields and keyed generated names by their prefix
and owners. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.differential import diff_states

__all__ = ["Mask", "apply_mask", "generalize", "learn_mask", "resource_of"]

_INDEX = re.compile(r"\[\d+\]")


@dataclass
class Mask:
    paths: set[tuple[str, str]] = field(default_factory=set)  # (resource, generalized path)
    objects: set[str] = field(default_factory=set)  # identities whose presence varies
    lifecycle: set[str] = field(default_factory=set)  # identities whose creations/deletions vary

    def to_json(self) -> dict[str, Any]:
        return {"paths": sorted(f"{resource} {path}" for resource, path in self.paths), "objects": sorted(self.objects), "lifecycle": sorted(self.lifecycle)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Mask:
        return cls({tuple(entry.split(" ", 1)) for entry in data.get("paths", ())}, set(data.get("objects", ())), set(data.get("lifecycle", ())))  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self.paths) + len(self.objects) + len(self.lifecycle)


def resource_of(identity: str) -> str:
    return identity.split("/", 1)[0]


def generalize(path: str) -> str:
    return _INDEX.sub("[*]", path)


def _covered(mask: Mask, difference: Mapping[str, Any]) -> bool:
    identity = str(difference["object"])
    if identity in mask.objects:
        return True
    path = generalize(str(difference["path"]))
    resource = resource_of(identity)
    # A masked path masks everything under it too.
    return any(resource == masked_resource and (path == masked or path.startswith(masked + ".") or path.startswith(masked + "[")) for masked_resource, masked in mask.paths)


def apply_mask(mask: Mask, differences: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The differences the mask does not cover."""
    return [dict(difference) for difference in differences if not _covered(mask, difference)]


def learn_mask(first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]], lifecycles: tuple[Mapping[str, Sequence[int]], Mapping[str, Sequence[int]]] = ({}, {})) -> Mask:
    """The mask of two fault-free runs: ``first`` and ``second`` are their states at the
    same checkpoints (identity -> normalized state), ``lifecycles`` their (creations,
    deletions) per identity."""
    mask = Mask()
    for mine, theirs in zip(first, second):
        for difference in diff_states(mine, theirs):
            identity = str(difference["object"])
            if difference["path"] == "":  # present in one run only
                mask.objects.add(identity)
            elif difference["path"] == "(whole)" and isinstance(mine.get(identity), list):
                mask.objects.add(identity)  # a different number of generated siblings
            else:
                mask.paths.add((resource_of(identity), generalize(str(difference["path"]))))
    left, right = lifecycles
    for identity in sorted(set(left) | set(right)):
        if list(left.get(identity, (0, 0))) != list(right.get(identity, (0, 0))):
            mask.lifecycle.add(identity)
    return mask

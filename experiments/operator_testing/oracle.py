"""The oracles of an operator test: no assertion written by the user (Sieve, OSDI 2022, §5;
Acto, SOSP 2023, §5). A perturbed session is compared with the learning session after the
learned mask (:mod:`.mask`):

- ``state``: the owned objects at every checkpoint (after each workload step quiesced) and
  at the end differ from the learning run's (an object missing or extra, a field's value);
  a generated child whose siblings are more numerous than in the learning run is reported
  as *duplicated children*;
- ``lifecycle``: an owned object created or deleted more (or fewer) times than in the
  learning run -- a child re-created after a crash, a second child that was later cleaned up;
- ``convergence``: the operator did not quiesce within the bound after a step or after the
  perturbation healed;
- ``checker:NAME``: a cluster checker (api-linearizability, garbage-collection ...) that
  held in the learning run fails here.

Each finding names the object, the field, this run's value and the learning run's. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaoskube.checkers.differential import diff_states
from chaoskube.experiments.operator_testing.mask import Mask, apply_mask

__all__ = ["dips", "inconsistencies", "judge", "relations"]


def judge(
    run: Mapping[str, Any], reference: Mapping[str, Any], mask: Mask | None, *, labels: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Findings of ``run`` against ``reference``. Both are ``{"checkpoints": [...], "end":
    {...}, "lifecycle": {...}, "converged": bool, "verdicts": {name: {"valid": ...}}}``; the
    checkpoints are aligned by position (the same workload, step by step). ``mask``: the
    learned mask (None: compare unmasked)."""
    mask = mask or Mask()
    findings: list[dict[str, Any]] = []
    mine, theirs = list(run.get("checkpoints") or ()), list(reference.get("checkpoints") or ())
    compared = [(labels[index] if index < len(labels) else f"checkpoint {index + 1}", mine[index], theirs[index]) for index in range(min(len(mine), len(theirs)))]
    compared.append(("end", run.get("end") or {}, reference.get("end") or {}))
    reported: set[tuple[str, str]] = set()
    for label, state, expected in compared:
        for difference in apply_mask(mask, diff_states(state, expected)):
            key = (str(difference["object"]), str(difference["path"]))
            if key in reported:
                continue
            reported.add(key)
            finding = {"oracle": "state", "at": label, **difference}
            identity = str(difference["object"])
            if identity.endswith("*") and isinstance(state.get(identity), list) and len(state[identity]) > len(expected.get(identity) or ()):
                finding["oracle"] = "duplicated-children"
                finding["run"] = f"{len(state[identity])} objects"
                finding["reference"] = f"{len(expected.get(identity) or ())} object(s)"
            findings.append(finding)
    left, right = run.get("lifecycle") or {}, reference.get("lifecycle") or {}
    for identity in sorted(set(left) | set(right)):
        if identity in mask.lifecycle or identity in mask.objects:
            continue
        mine_counts, their_counts = list(left.get(identity, (0, 0))), list(right.get(identity, (0, 0)))
        if mine_counts != their_counts:
            findings.append({"oracle": "lifecycle", "at": "whole run", "object": identity, "path": "(creations, deletions)", "run": mine_counts, "reference": their_counts})
    custom = list(run.get("custom") or reference.get("custom") or ())
    if custom:
        learned = relations(theirs, labels, custom)
        seen = {(finding["object"], finding["path"]) for finding in inconsistencies(theirs, labels, custom)}
        for finding in inconsistencies(mine, labels, custom, against=learned):
            if (finding["object"], finding["path"]) not in seen:
                findings.append(finding)
    if run.get("fewest"):
        held = {(f["object"], f["path"]) for f in dips(theirs, reference.get("fewest") or [], labels)} if reference.get("fewest") else set()
        for finding in dips(mine, run["fewest"], labels):
            if (finding["object"], finding["path"]) not in held:
                findings.append(finding)
    if run.get("converged") is False:
        findings.append({"oracle": "convergence", "at": str(run.get("unconverged_at", "")), "object": "", "path": "", "run": "not quiet within the bound", "reference": "quiet"})
    theirs_verdicts = reference.get("verdicts") or {}
    for name, verdict in sorted((run.get("verdicts") or {}).items()):
        if verdict.get("valid") is False and (theirs_verdicts.get(name) or {}).get("valid") is True:
            findings.append({"oracle": f"checker:{name}", "at": "whole run", "object": "", "path": "", "run": verdict.get("reason", ""), "reference": "held"})
    return findings


# ----------------------------------------------------------------------------- consistency
def relations(checkpoints: Sequence[Mapping[str, Any]], labels: Sequence[str], custom: Sequence[str]) -> dict[tuple[str, str, str], list[tuple[str, int, int]]]:
    """For each custom resource, each integer field of its spec and status, and each kind of
    child it owns directly: (checkpoint, field value, number of children) wherever the
    custom resource exists. Acto's consistency oracle (SOSP 2023, §5.1) matches desired
    state to system state the same way: a count field against the objects it counts."""
    out: dict[tuple[str, str, str], list[tuple[str, int, int]]] = {}
    for index, state in enumerate(checkpoints):
        label = labels[index] if index < len(labels) else f"checkpoint {index + 1}"
        children: dict[tuple[str, str], dict[str, int]] = {}  # (kind, name) -> resource -> count
        for identity, value in state.items():
            resource = identity.split("/", 1)[0]
            for obj in value if isinstance(value, list) else [value]:
                if not isinstance(obj, dict):
                    continue
                for reference in (obj.get("metadata") or {}).get("ownerReferences") or ():
                    counts = children.setdefault((str(reference.get("kind")), str(reference.get("name"))), {})
                    counts[resource] = counts.get(resource, 0) + 1
        for identity, obj in state.items():
            if identity.split("/", 1)[0] not in custom or not isinstance(obj, dict):
                continue
            kind, name = str(obj.get("kind")), str((obj.get("metadata") or {}).get("name"))
            mine = children.get((kind, name), {})
            fields = [(f"spec.{key}", value) for key, value in (obj.get("spec") or {}).items()] + [(f"status.{key}", value) for key, value in (obj.get("status") or {}).items() if isinstance(obj.get("status"), dict)]
            for field_name, value in fields:
                if not isinstance(value, int) or isinstance(value, bool):
                    continue
                for resource in sorted(set(mine) | _child_resources(checkpoints, kind, name)):
                    out.setdefault((identity, field_name, resource), []).append((label, value, mine.get(resource, 0)))
    return out


def _child_resources(checkpoints: Sequence[Mapping[str, Any]], kind: str, name: str) -> set[str]:
    """Every resource with an object owned by (kind, name) at some checkpoint (a count of
    zero is a count too)."""
    found = set()
    for state in checkpoints:
        for identity, value in state.items():
            for obj in value if isinstance(value, list) else [value]:
                if isinstance(obj, dict) and any(str(reference.get("kind")) == kind and str(reference.get("name")) == name for reference in (obj.get("metadata") or {}).get("ownerReferences") or ()):
                    found.add(identity.split("/", 1)[0])
    return found


def inconsistencies(checkpoints: Sequence[Mapping[str, Any]], labels: Sequence[str], custom: Sequence[str], *, against: Mapping[tuple[str, str, str], list[tuple[str, int, int]]] | None = None) -> list[dict[str, Any]]:
    """A count field and the children it counts that agree at two different values and then
    disagree: the children do not follow the spec (a scale-down that forgets some), or the
    status contradicts the world. With ``against`` (the learning run's relations), a
    relation is judged only where it held at every checkpoint of the learning run."""
    findings = []
    for (identity, field_name, resource), rows in sorted(relations(checkpoints, labels, custom).items()):
        if against is not None:
            reference = against.get((identity, field_name, resource))
            if not reference or any(value != count for _, value, count in reference) or len({value for _, value, _ in reference}) < 2:
                continue
            agreeing = {value for _, value, count in reference}
        else:
            agreeing = {value for _, value, count in rows if value == count}
            if len(agreeing) < 2:
                continue
        for label, value, count in rows:
            if value != count:
                what = "the status contradicts the world" if field_name.startswith("status.") else "the children do not follow the spec"
                findings.append({"oracle": "consistency", "at": label, "object": identity, "path": f".{field_name} vs {resource}", "run": f"{field_name}={value}, {count} {resource}", "reference": f"{field_name} = number of {resource} (held at {len(agreeing)} values)", "why": what})
                break
    return findings


# ----------------------------------------------------------------------------- availability
def _count(state: Mapping[str, Any], label: str) -> int:
    owner, _, resource = label.partition(" ")
    kind, _, name = owner.partition("/")
    total = 0
    for identity, value in state.items():
        if identity.split("/", 1)[0] != resource:
            continue
        for obj in value if isinstance(value, list) else [value]:
            if isinstance(obj, dict) and "deleting" not in obj and any(str(r.get("kind")) == kind and str(r.get("name")) == name for r in (obj.get("metadata") or {}).get("ownerReferences") or ()):
                total += 1
    return total


def dips(checkpoints: Sequence[Mapping[str, Any]], fewest: Sequence[Mapping[str, int]], labels: Sequence[str]) -> list[dict[str, Any]]:
    """Children replaced all at once: during a step, an owner's children of one kind fell
    below what it had both before and after the step (an update that restarts every replica
    at once, where a rolling one keeps the others serving; Acto, SOSP 2023, reports such
    rollouts; Kubernetes' own Deployments bound it with maxUnavailable)."""
    findings = []
    for index in range(1, min(len(checkpoints), len(fewest))):
        before, after = checkpoints[index - 1], checkpoints[index]
        for label, low in sorted(fewest[index].items()):
            was, now = _count(before, label), _count(after, label)
            if low < min(was, now):
                owner, _, resource = label.partition(" ")
                findings.append({"oracle": "availability", "at": labels[index] if index < len(labels) else f"checkpoint {index + 1}", "object": owner, "path": resource,
                                 "run": f"{resource} fell to {low} during the step", "reference": f"{was} before, {now} after", "why": "children replaced all at once"})
    return findings

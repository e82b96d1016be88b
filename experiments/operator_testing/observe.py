"""What a session's journal says about the operator (pure): its requests and watches, its
writes, and the successive states of the objects it owns -- the custom resources, every
object with an ownerReference chain to one, and every object it wrote.

Objects come from the store's own record (``raft-apply`` events: every key written at every
revision), so nothing is sampled: each committed state of each owned object is there, in
commit order. States are normalized as the differential checker normalizes end states
(:func:`chaoskube.checkers.differential.normalize`: uids, resourceVersions, timestamps and
managedFields dropped; owner references by their owner's identity; an object whose name was
generated is known by its ``generateName`` and owners) before any comparison.

A generated name is followed into the names made from it (:func:`generated_names`,
:func:`follow`): a Deployment created with ``generateName: a-`` is ``a-npc9p`` in one run and
``a-hpk8v`` in another (the suffix is drawn from the run's random stream, which a perturbation
shifts), and the Deployment controller names its ReplicaSet ``<deployment>-<pod-template-hash>``
and the ReplicaSet its Pods ``<replicaset>-<suffix>`` (kubernetes pkg/controller/deployment/
sync.go, getNewReplicaSet; pkg/controller/controller_utils.go, GetPodFromTemplate), and an
operator may record the name in a field. Every name or value that is a generated name, or
begins with one and ``-``, has that part replaced by the generated name's normal form
(``a-*``), so the ReplicaSet is ``a-*-<hash>`` and the annotation ``a-*`` in both runs.

A child made for an owner already gone, and removed since, is left out (:func:`posthumous`):
an operator syncing from a cache that still holds a deleted custom resource (its watch broken
by an API-server or etcd-leader kill) creates a child whose ownerReferences all name objects
no longer in the store, and the garbage collector deletes it, its own dependents with it --
kubernetes pkg/controller/garbagecollector/garbagecollector.go, attemptToDeleteItem: a
dependent with no solid owner, only dangling ones, is deleted. It never served the custom
resource and the end state is the same; the upstream sample-controller does the same from
its lister. A child made while an owner lives, or one never removed, is judged as any other.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.differential import _identity, _scrub  # noqa: PLC2701 - the same normalization, per object
from chaoskube.checkers.replay import REGISTRY_PREFIX, parse_key
from chaoskube.checkers.replay import _loads as loads

__all__ = ["Observation", "follow", "generated_names", "observe", "posthumous"]

OPERATOR = "operator"
MUTATING = ("create", "update", "patch", "delete")


@dataclass
class Observation:
    """One session, as the oracles see it."""

    writes: list[dict[str, Any]] = field(default_factory=list)  # the operator's answered writes, in order
    user_writes: list[dict[str, Any]] = field(default_factory=list)  # the workload's answered writes of custom resources
    requests: list[dict[str, Any]] = field(default_factory=list)  # every request of the operator
    watches: list[str] = field(default_factory=list)  # resources it watched (in order of first watch)
    #: identity -> the successive normalized states (None: absent), consecutive repeats merged
    history: dict[str, list[Any]] = field(default_factory=dict)
    #: identity -> normalized end state (absent objects left out)
    end: dict[str, Any] = field(default_factory=dict)
    #: identity -> (creations, deletions) over the session
    lifecycle: dict[str, list[int]] = field(default_factory=dict)
    #: the owned objects' normalized states at each checkpoint (after each workload step
    #: quiesced), identity -> state, in checkpoint order
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    #: per checkpoint: "KIND/NAME resource" -> the fewest children of that resource the owner
    #: had at any committed state since the previous checkpoint
    fewest: list[dict[str, int]] = field(default_factory=list)
    log: list[tuple[float, str]] = field(default_factory=list)  # operator output (t, line)
    marks: list[dict[str, Any]] = field(default_factory=list)  # test-operator events (steps, perturbation)
    operator_starts: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"writes": self.writes, "watches": self.watches, "end": self.end, "checkpoints": self.checkpoints, "lifecycle": self.lifecycle, "history_lengths": {key: len(value) for key, value in sorted(self.history.items())}}


def generated_names(objects: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Every generated name among ``objects`` (``metadata.name`` = ``generateName`` + a
    suffix) -> its normal form: its ``generateName``, itself followed (a Pod's
    ``generateName`` is its ReplicaSet's name and ``-``), and ``*``. Pure."""
    prefixes: dict[str, str] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        name, prefix = str(meta.get("name") or ""), str(meta.get("generateName") or "")
        if prefix and name.startswith(prefix) and len(name) > len(prefix):
            prefixes[name] = prefix
    normal: dict[str, str] = {}
    for name in sorted(prefixes, key=lambda item: (len(item), item)):  # a prefix's own name first
        normal[name] = _follow_name(prefixes[name], normal) + "*"
    return normal


def _follow_name(text: str, normal: Mapping[str, str]) -> str:
    if text in normal:
        return normal[text]
    # The longest generated name that text begins with, followed by "-".
    cut = text.rfind("-")
    while cut > 0:
        head = text[:cut]
        if head in normal:
            return normal[head] + text[cut:]
        cut = text.rfind("-", 0, cut)
    return text


def follow(value: Any, normal: Mapping[str, str]) -> Any:
    """``value`` with every string that is a generated name of ``normal``
    (:func:`generated_names`), or begins with one and ``-``, written in its normal form
    (mapping keys are left as they are). Pure."""
    if not normal:
        return value
    if isinstance(value, str):
        return _follow_name(value, normal)
    if isinstance(value, dict):
        return {key: follow(item, normal) for key, item in value.items()}
    if isinstance(value, list):
        return [follow(item, normal) for item in value]
    return value


def _follow_key(key: tuple[str, str], normal: Mapping[str, str]) -> tuple[str, str]:
    namespace, slash, name = key[1].rpartition("/")
    return (key[0], f"{namespace}{slash}{_follow_name(name, normal)}")


def posthumous(timeline: Sequence[tuple[float, tuple[str, str], Mapping[str, Any] | None]]) -> set[int]:
    """Indices of ``timeline`` (``(t, key, object or None for a delete)``, in commit order)
    that belong to a posthumous life: an object created while every owner its
    ownerReferences name was absent from the store, or was itself a posthumous life, and
    deleted later (by the garbage collector, as upstream's would). Pure."""
    present: set[str] = set()  # uids in the store
    uid_of: dict[tuple[str, str], str] = {}
    opened: dict[tuple[str, str], dict[str, Any]] = {}  # key -> its life so far, if a candidate
    lives: dict[str, dict[str, Any]] = {}  # uid -> candidate life: indices, ghost owners, ended
    for index, (_, key, obj) in enumerate(timeline):
        if obj is None:
            present.discard(uid_of.pop(key, ""))
            life = opened.pop(key, None)
            if life is not None:
                life["indices"].append(index)
                life["ended"] = True
            continue
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if key not in uid_of:  # a creation
            owners = [str(reference.get("uid") or "") for reference in meta.get("ownerReferences") or ()]
            if owners and all(owner not in present or owner in lives for owner in owners):
                life = {"indices": [], "ghosts": [owner for owner in owners if owner in lives], "ended": False}
                lives[uid] = opened[key] = life
        uid_of[key] = uid
        present.add(uid)
        if key in opened:
            opened[key]["indices"].append(index)
    # A life whose owners were lives of this kind counts only if they all ended too.
    confirmed = {uid for uid, life in lives.items() if life["ended"]}
    changed = True
    while changed:
        changed = False
        for uid in sorted(confirmed):
            if any(ghost not in confirmed for ghost in lives[uid]["ghosts"]):
                confirmed.discard(uid)
                changed = True
    return {index for uid in confirmed for index in lives[uid]["indices"]}


def observe(events: Iterable[Mapping[str, Any]], custom_resources: Sequence[str], checkpoints: Sequence[float] = ()) -> Observation:
    """``custom_resources``: the store resources of the CRDs (``widgets.gallery.chaoskube.dev``);
    ``checkpoints``: virtual times at which to take the owned objects' states (in order)."""
    custom = set(custom_resources)
    obs = Observation()
    store: dict[tuple[str, str], dict[str, Any]] = {}
    timeline: list[tuple[float, tuple[str, str], dict[str, Any] | None]] = []
    written: set[tuple[str, str]] = set()
    seen_revisions: set[int] = set()
    for event in events:
        kind = event.get("type")
        if kind == "raft-apply" and event.get("events"):
            revision = event.get("revision")
            if revision is None or revision in seen_revisions:
                continue
            seen_revisions.add(revision)
            for change, key, value, *_ in event["events"]:
                if not key.startswith(REGISTRY_PREFIX):
                    continue
                parsed = parse_key(key)
                if parsed is None or parsed[0] in ("leases", "events"):
                    continue
                if change == "DELETE":
                    store.pop(parsed, None)
                    timeline.append((float(event.get("t", 0.0)), parsed, None))
                else:
                    obj = loads(value)
                    store[parsed] = obj
                    timeline.append((float(event.get("t", 0.0)), parsed, obj))
        elif kind == "api-op" and event.get("client") == OPERATOR:
            if event.get("phase") == "ok" and event.get("verb") in MUTATING:
                obs.writes.append({key: event.get(key) for key in ("t", "verb", "resource", "subresource", "namespace", "name", "code")})
                resource = str(event.get("resource"))
                name = str(event.get("name") or "")
                namespace = str(event.get("namespace") or "")
                if name:
                    written.add((resource, f"{namespace}/{name}" if namespace else name))
        elif kind == "api-op" and event.get("client") == "outside" and event.get("phase") == "ok" and event.get("verb") in MUTATING and event.get("resource") in custom:
            obs.user_writes.append({key: event.get(key) for key in ("t", "verb", "resource", "subresource", "namespace", "name", "code")})
        elif kind == "http-request" and event.get("client") == OPERATOR:
            obs.requests.append({key: event.get(key) for key in ("t", "verb", "resource", "subresource", "namespace", "name", "code", "outcome")})
            if event.get("verb") == "watch" and event.get("resource") and event["resource"] not in obs.watches:
                obs.watches.append(str(event["resource"]))
        elif kind == "operator-output":
            obs.log.append((float(event.get("t", 0.0)), str(event.get("line", ""))))
        elif kind == "operator" and event.get("event") == "start":
            obs.operator_starts.append(float(event.get("t", 0.0)))
        elif kind == "test-operator":
            obs.marks.append(dict(event))
    # Ownership: custom resources, anything owned (transitively) by one, anything written.
    # Every incarnation counts: a name used again (a Deployment made anew, its ReplicaSet
    # with the same hash) leaves the children of the earlier one owned, and named, too.
    every: dict[tuple[str, str], dict[str, Any]] = {}
    incarnations: dict[str, tuple[tuple[str, str], dict[str, Any]]] = {}  # uid -> (key, latest version)
    for _, key, obj in timeline:
        if obj is not None:
            every[key] = obj
            incarnations[str(obj.get("metadata", {}).get("uid", ""))] = (key, obj)
    owned_uids = {uid for uid, (key, _) in incarnations.items() if key[0] in custom}
    changed = True
    while changed:
        changed = False
        for uid, (_, obj) in incarnations.items():
            if uid not in owned_uids and any(ref.get("uid") in owned_uids for ref in obj.get("metadata", {}).get("ownerReferences") or ()):
                owned_uids.add(uid)
                changed = True
    owned = {key for uid, (key, _) in incarnations.items() if key[0] in custom or uid in owned_uids} | (written & set(every))
    normal = generated_names(every.values())
    followed = {key: (_follow_key(key, normal), follow(obj, normal)) for key, obj in every.items()}
    names = {uid: f"{key[0]}/{_identity(key[0], _follow_key(key, normal)[1], follow(obj, normal), {})}" for uid, (key, obj) in incarnations.items()}
    identities: dict[tuple[str, str], str] = {}
    for key, (named, obj) in followed.items():
        if key in owned:
            identities[key] = f"{key[0]}/{_identity(key[0], named[1], obj, names)}"
    present: dict[tuple[str, str], bool] = {}
    current: dict[tuple[str, str], Any] = {}
    pending = list(checkpoints)

    def snapshot() -> dict[str, Any]:
        grouped: dict[str, list[str]] = {}
        for key, state in sorted(current.items()):
            grouped.setdefault(identities[key], []).append(json.dumps(state, sort_keys=True))
        out: dict[str, Any] = {}
        for identity, items in sorted(grouped.items()):
            decoded = [json.loads(item) for item in sorted(items)]
            out[identity] = decoded[0] if len(decoded) == 1 and not identity.endswith("*") else decoded
        return out

    def child_counts() -> dict[str, int]:
        out: dict[str, int] = {}
        for key, state in current.items():
            if "deleting" in state:
                continue
            for reference in (state.get("metadata") or {}).get("ownerReferences") or ():
                label = f"{reference.get('kind')}/{reference.get('name')} {key[0]}"
                out[label] = out.get(label, 0) + 1
        return out

    fewest: dict[str, int] = {}

    def note() -> None:
        now = child_counts()
        for label in set(fewest) | set(now):
            fewest[label] = min(fewest.get(label, 0), now.get(label, 0))  # absent at the start: 0

    ghosts = posthumous(timeline)
    for index, (t, key, obj) in enumerate(timeline):
        while pending and t > pending[0]:
            obs.checkpoints.append(snapshot())
            obs.fewest.append(dict(fewest))
            fewest = child_counts()
            pending.pop(0)
        if key not in owned or index in ghosts:
            continue
        identity = identities[key]
        history = obs.history.setdefault(identity, [])
        counts = obs.lifecycle.setdefault(identity, [0, 0])
        if obj is None:
            if present.get(key):
                counts[1] += 1
            present[key] = False
            state = None
            current.pop(key, None)
        else:
            if not present.get(key):
                counts[0] += 1
            present[key] = True
            obj = follow(obj, normal)
            state = _scrub(key[0], obj, names) if not obj.get("metadata", {}).get("deletionTimestamp") else {"deleting": _scrub(key[0], obj, names)}
            current[key] = state
        if not history or history[-1] != state:
            history.append(state)
        note()
    while pending:
        obs.checkpoints.append(snapshot())
        obs.fewest.append(dict(fewest))
        fewest = child_counts()
        pending.pop(0)
    obs.end = snapshot()
    return obs

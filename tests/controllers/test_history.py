"""ControllerRevision history (:mod:`chaoskube.controllers.history`), the rows of
kubernetes/kubernetes ``pkg/controller/history/controller_history_test.go``
(``TestFindEqualRevisions``, ``TestSortControllerRevisions``,
``TestRealHistory_UpdateControllerRevision``) transcribed as data, and the rollback
renumbering of ``getStatefulSetRevisions`` (``pkg/controller/statefulset/stateful_set_control.go``)
and the DaemonSet controller's ``constructHistory`` (``pkg/controller/daemon/update.go``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import trio

from chaoskube.api.objects import ControllerRevision, ObjectMeta
from chaoskube.api.protocol import Status
from chaoskube.client.client import ApiError
from chaoskube.controllers.history import find_equal_revisions, plan_current_history, plan_update_revision, sort_revisions


def _template(labels: dict[str, str], image: str = "nginx") -> dict[str, Any]:
    """``rawTemplate(&newStatefulSet(3, name, uid, labels).Spec.Template)`` as our revision data."""
    return {"spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "nginx", "image": image}]}, "$patch": "replace"}}}


SS1 = _template({"foo": "bar"})
SS2 = _template({"goo": "car"})


def _revision(name: str, data: dict[str, Any], number: int, created: str = "2026-01-01T00:00:00Z") -> ControllerRevision:
    return ControllerRevision(metadata=ObjectMeta(name=name, namespace="default", creation_timestamp=created, resource_version="1"), data=data, revision=number)


# =========================================================================== TestFindEqualRevisions
_FIND = {"ss1Rev1": _revision("ss1Rev1", SS1, 1), "ss1Rev2": _revision("ss1Rev2", SS1, 2), "ss2Rev1": _revision("ss2Rev1", SS2, 1), "ss2Rev2": _revision("ss2Rev2", SS2, 2)}
FIND_EQUAL_ROWS = [
    # (name, needle's data, revisions, want)
    ("finds equivalent", SS1, ["ss1Rev1", "ss2Rev1", "ss2Rev2"], {"ss1Rev1"}),
    ("finds nothing when empty", SS1, [], set()),
    ("finds nothing with no matches", SS1, ["ss2Rev2", "ss2Rev1"], set()),
]


@pytest.mark.parametrize(("name", "needle", "revisions", "want"), FIND_EQUAL_ROWS, ids=[row[0] for row in FIND_EQUAL_ROWS])
def test_find_equal_revisions(name: str, needle: dict[str, Any], revisions: list[str], want: set[str]) -> None:
    found = find_equal_revisions([_FIND[revision] for revision in revisions], needle)
    assert {revision.metadata.name for revision in found} == want and len(found) == len(want)


# =========================================================================== TestSortControllerRevisions
# Upstream's five revisions share one name (same template, same hash); ours get names that
# sort against the creationTimestamp tie-break, so the row tests the tie-break order itself.
_SORT = {
    "ss1Rev1": _revision("ss1-e", SS1, 1),
    "ss1Rev2": _revision("ss1-d", SS1, 2),
    "ss1Rev3": _revision("ss1-c", SS1, 3),
    "ss1Rev3Time2": _revision("ss1-b", SS1, 3, created="2026-01-01T00:00:01Z"),
    "ss1Rev3Time2Name2": _revision("ss1-c2", SS1, 3, created="2026-01-01T00:00:01Z"),
}
SORT_ROWS = [
    ("out of order", ["ss1Rev2", "ss1Rev1", "ss1Rev3"], ["ss1Rev1", "ss1Rev2", "ss1Rev3"]),
    ("sorted", ["ss1Rev1", "ss1Rev2", "ss1Rev3"], ["ss1Rev1", "ss1Rev2", "ss1Rev3"]),
    ("reversed", ["ss1Rev3", "ss1Rev2", "ss1Rev1"], ["ss1Rev1", "ss1Rev2", "ss1Rev3"]),
    # upstream's row lists five wanted names for four inputs and compares the first four
    ("with ties", ["ss1Rev3", "ss1Rev3Time2", "ss1Rev2", "ss1Rev1"], ["ss1Rev1", "ss1Rev2", "ss1Rev3", "ss1Rev3Time2", "ss1Rev3Time2Name2"]),
    ("empty", [], []),
]


@pytest.mark.parametrize(("name", "revisions", "want"), SORT_ROWS, ids=[row[0] for row in SORT_ROWS])
def test_sort_controller_revisions(name: str, revisions: list[str], want: list[str]) -> None:
    got = [revision.metadata.name for revision in sort_revisions(_SORT[revision] for revision in revisions)]
    assert got == [_SORT[wanted].metadata.name for wanted in want[: len(revisions)]]


def test_sort_breaks_a_creation_tie_by_name() -> None:
    later = [_SORT["ss1Rev3Time2Name2"], _SORT["ss1Rev3Time2"]]
    assert [revision.metadata.name for revision in sort_revisions(later)] == ["ss1-b", "ss1-c2"]


# =========================================================================== getStatefulSetRevisions
A, B, C = _template({"app": "web"}, "v1"), _template({"app": "web"}, "v2"), _template({"app": "web"}, "v3")

UPDATE_REVISION_ROWS = [
    # (name, history as (name, data, number), template, want (revision reused or None, number))
    ("no history: create revision 1", [], A, (None, 1)),
    ("unchanged template: the latest, as it is", [("a", A, 1)], A, ("a", 1)),
    ("new template: create max+1", [("a", A, 1)], B, (None, 2)),
    ("rollback: the earlier revision renumbered to max+1", [("a", A, 1), ("b", B, 2)], A, ("a", 3)),
    ("rollback over a gap left by truncation", [("a", A, 1), ("c", C, 7)], A, ("a", 8)),
    ("roll forward again after a rollback", [("a", A, 3), ("b", B, 2)], B, ("b", 4)),
    ("the latest holds the template even if an older one does too", [("a", A, 1), ("b", B, 2), ("a2", A, 3)], A, ("a2", 3)),
]


@pytest.mark.parametrize(("name", "history", "template", "want"), UPDATE_REVISION_ROWS, ids=[row[0] for row in UPDATE_REVISION_ROWS])
def test_update_revision_is_reused_renumbered_or_new(name: str, history: list[tuple[str, dict[str, Any], int]], template: dict[str, Any], want: tuple[str | None, int]) -> None:
    revision, number = plan_update_revision([_revision(*row) for row in history], template)
    assert (revision.metadata.name if revision else None, number) == want


CURRENT_HISTORY_ROWS = [
    # constructHistory: currRevision = maxRevision(old) + 1; cur renumbered when below it
    ("no history: snapshot revision 1", [], A, (None, 1)),
    ("unchanged template", [("a", A, 1)], A, ("a", 1)),
    ("new template", [("a", A, 1)], B, (None, 2)),
    ("rollback: renumbered above the old ones", [("a", A, 1), ("b", B, 2)], A, ("a", 3)),
    ("rollback over a gap", [("a", A, 1), ("c", C, 7)], A, ("a", 8)),
    ("duplicates of the current template: the highest kept", [("a", A, 1), ("b", B, 2), ("a2", A, 5)], A, ("a2", 5)),
]


@pytest.mark.parametrize(("name", "history", "template", "want"), CURRENT_HISTORY_ROWS, ids=[row[0] for row in CURRENT_HISTORY_ROWS])
def test_daemon_set_current_history(name: str, history: list[tuple[str, dict[str, Any], int]], template: dict[str, Any], want: tuple[str | None, int]) -> None:
    revision, number = plan_current_history([_revision(*row) for row in history], template)
    assert (revision.metadata.name if revision else None, number) == want


# =========================================================================== TestRealHistory_UpdateControllerRevision
class _Client:
    """Answers updates as the fake clientset with the row's reactor: ``conflicts`` 409s
    first, then success (``conflictSuccess``), or always 500 (``internalError``)."""

    def __init__(self, reactor: str | None) -> None:
        self.reactor, self.updates = reactor, []

    async def update(self, obj: ControllerRevision) -> ControllerRevision:
        self.updates.append(obj.revision)
        if self.reactor == "internalError":
            raise ApiError(Status(500, "InternalError", "internal error"))
        if self.reactor == "conflictSuccess" and len(self.updates) <= 2:
            raise ApiError(Status(409, "Conflict", "conflict"))
        return obj


UPDATE_ROWS = [
    # (name, new revision relative to ss1Rev1's, reactor, err)
    ("update succeeds", 1, None, False),
    ("update succeeds no noop", 0, None, False),
    ("update fails on error", 10, "internalError", True),
    ("update on succeeds on conflict", 1, "conflictSuccess", False),
]


@pytest.mark.parametrize(("name", "delta", "reactor", "err"), UPDATE_ROWS, ids=[row[0] for row in UPDATE_ROWS])
def test_update_controller_revision(name: str, delta: int, reactor: str | None, err: bool) -> None:
    from chaoskube.controllers.statefulset import StatefulSetController

    revision = _revision("ss1-rev", SS1, 1)
    client = _Client(reactor)
    cache = {"default/ss1-rev": revision}

    async def sleep(seconds: float) -> None:
        pass

    fake = SimpleNamespace(client=client, revisions=SimpleNamespace(indexer=SimpleNamespace(get_by_key=cache.get)), process=SimpleNamespace(sleep=sleep))
    target = revision.revision + delta

    async def main() -> None:
        await StatefulSetController._renumber(fake, revision, target)

    if err:
        with pytest.raises(ApiError):
            trio.run(main)
        return
    trio.run(main)
    assert client.updates == ([] if delta == 0 else [target] * (3 if reactor == "conflictSuccess" else 1))
    assert revision.revision == 1  # the cached object is never mutated


# =========================================================================== cleanupHistory
def _hashed(name: str, data: dict[str, Any], number: int) -> ControllerRevision:
    revision = _revision(name, data, number)
    revision.metadata.labels = {"controller-revision-hash": name}
    return revision


D = [_template({"app": "d"}, f"v{number}") for number in range(6)]
CLEANUP_ROWS = [
    # (name, history as (hash, template index, number), current template, live hashes, limit, deleted)
    ("within the limit: none", [("h1", 1, 1), ("h2", 2, 2)], 2, set(), 10, []),
    ("beyond it: the oldest old ones", [("h1", 1, 1), ("h2", 2, 2), ("h3", 3, 3), ("h4", 4, 4)], 4, set(), 1, ["h1", "h2"]),
    ("the current one never counts nor goes", [("h1", 1, 5), ("h2", 2, 2), ("h3", 3, 3)], 1, set(), 0, ["h2", "h3"]),
    ("a live one is skipped: a newer one goes in its place", [("h1", 1, 1), ("h2", 2, 2), ("h3", 3, 3), ("h4", 4, 4)], 4, {"h1"}, 1, ["h2", "h3"]),
    ("live ones left over the limit", [("h1", 1, 1), ("h2", 2, 2), ("h3", 3, 3)], 3, {"h1", "h2"}, 0, []),
    ("limit 0: every old one not live", [("h1", 1, 1), ("h2", 2, 2), ("h3", 3, 3)], 3, {"h2"}, 0, ["h1"]),
]


@pytest.mark.parametrize(("name", "history", "current", "live", "limit", "deleted"), CLEANUP_ROWS, ids=[row[0] for row in CLEANUP_ROWS])
def test_daemon_set_cleanup_history(name: str, history: list[tuple[str, int, int]], current: int, live: set[str], limit: int, deleted: list[str]) -> None:
    from chaoskube.controllers.history import old_histories_to_clean

    revisions = [_hashed(hash_value, D[index], number) for hash_value, index, number in history]
    assert [revision.metadata.name for revision in old_histories_to_clean(revisions, D[current], live, limit)] == deleted

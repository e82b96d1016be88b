"""The HTTPS front's oracles on synthetic journals: outside clients' watches (api-watch)
and paginated lists (api-pagination)."""

from __future__ import annotations

import json
from typing import Any

from chaoskube.checkers.api_pagination import check_api_pagination
from chaoskube.checkers.api_watch import check_api_watch


def pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def put(t: float, revision: int, key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "raft-apply", "t": t, "revision": revision, "member": "etcd-1", "events": [["PUT", f"/registry/pods/{key}", json.dumps(value), revision]]}


def delete(t: float, revision: int, key: str) -> dict[str, Any]:
    return {"type": "raft-apply", "t": t, "revision": revision, "member": "etcd-1", "events": [["DELETE", f"/registry/pods/{key}", "", revision]]}


def store() -> list[dict[str, Any]]:
    """a, b, c created at 1..3; b rewritten at 4; a deleted at 5."""
    return [put(1.0, 1, "default/a", pod("a")), put(2.0, 2, "default/b", pod("b")), put(3.0, 3, "default/c", pod("c")),
            put(4.0, 4, "default/b", pod("b", {"v": "2"})), delete(5.0, 5, "default/a")]


# =========================================================================== outside watches
def outside_open(t: float, watch: str, from_rv: str) -> dict[str, Any]:
    return {"type": "watch-open", "t": t, "name": f"http:{watch}", "watch": watch, "server": "kube-apiserver-1", "resource": "pods",
            "namespace": "default", "from_rv": from_rv, "outside": True, "client": "kubectl"}


def recv(t: float, watch: str, *events: list[str]) -> dict[str, Any]:
    return {"type": "watch-recv", "t": t, "name": f"http:{watch}", "watch": watch, "events": [list(event) for event in events]}


def test_an_outside_watch_from_a_revision_gets_exactly_the_changes_after_it():
    events = [*store(), outside_open(5.5, "w1", "2"), recv(5.6, "w1", ["ADDED", "default/c", "3"], ["MODIFIED", "default/b", "4"], ["DELETED", "default/a", "5"])]
    verdict = check_api_watch(events)
    assert verdict.valid is True, verdict.reason
    assert verdict.details["outside_watches"] == 1 and verdict.details["events"] == 3


def test_an_outside_watch_resumed_with_a_gap_a_duplicate_or_a_reorder_is_caught():
    start = [*store(), outside_open(5.5, "w1", "2")]
    gap = check_api_watch([*start, recv(5.6, "w1", ["MODIFIED", "default/b", "4"])])
    assert gap.valid is False and "missed the ADDED of default/c" in gap.reason
    duplicate = check_api_watch([*start, recv(5.6, "w1", ["ADDED", "default/c", "3"], ["ADDED", "default/c", "3"])])
    assert duplicate.valid is False and "duplicated or out of order" in duplicate.reason
    replayed = check_api_watch([*start, recv(5.6, "w1", ["ADDED", "default/b", "2"])])  # the start revision again
    assert replayed.valid is False


def test_an_outside_watch_answered_410_is_excused_and_one_from_zero_is_not_judged():
    # the rest after a 410 is not required
    assert check_api_watch([*store(), outside_open(5.5, "w1", "2"), recv(5.6, "w1", ["ADDED", "default/c", "3"], ["ERROR", "", "410"], ["DELETED", "default/a", "5"])]).valid is True
    # from "0": synthetic ADDEDs of a state the stream does not name
    verdict = check_api_watch([*store(), outside_open(5.5, "w2", "0"), recv(5.6, "w2", ["ADDED", "default/c", "3"])])
    assert verdict.valid is None


# =========================================================================== paginated lists
def page(token_rv: int | None, start: str, rv: int, items: list[list[str]], next_rv: int | None = None, next_start: str | None = None, code: int = 200) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "list-page", "t": 6.0, "client": "kubectl", "server": "kube-apiserver-1", "resource": "pods", "namespace": "default",
                           "label_selector": "", "field_selector": "", "limit": 1, "token_rv": token_rv, "start": start, "code": code}
    if code == 200:
        out.update(resource_version=rv, items=items)
    if next_rv is not None:
        out.update(next_rv=next_rv, next_start=next_start)
    return out


def test_pages_at_the_first_pages_revision_are_one_snapshot():
    pages = [page(None, "", 3, [["default/a", "1"]], 3, "default/a\x00"), page(3, "default/a\x00", 3, [["default/b", "2"]], 3, "default/b\x00"),
             page(3, "default/b\x00", 3, [["default/c", "3"]])]
    verdict = check_api_pagination([*store(), *pages])
    assert verdict.valid is True, verdict.reason
    assert verdict.details["judged_items"] == 3


def test_a_page_read_at_a_later_revision_is_caught():
    # the second page read at the latest revision: b at 4, not 2
    mixed = check_api_pagination([*store(), page(None, "", 3, [["default/a", "1"]], 3, "default/a\x00"), page(3, "default/a\x00", 5, [["default/b", "4"]], 5, "default/b\x00")])
    assert mixed.valid is False and "continued from revision 3 was read at revision 5" in mixed.reason
    # ... or claiming revision 3 but holding the later version
    lying = check_api_pagination([*store(), page(3, "default/a\x00", 3, [["default/b", "4"]], 3, "default/b\x00")])
    assert lying.valid is False and "holds default/b at version 4; the store held version 2" in lying.reason
    # a token for a revision other than the page's
    token = check_api_pagination([*store(), page(None, "", 3, [["default/a", "1"]], 5, "default/a\x00")])
    assert token.valid is False and "continue token for revision 5" in token.reason


def test_a_page_that_skips_or_repeats_an_object_is_caught():
    skipped = check_api_pagination([*store(), page(3, "default/a\x00", 3, [["default/c", "3"]])])
    assert skipped.valid is False and "lacks default/b" in skipped.reason
    repeated = check_api_pagination([*store(), page(3, "default/\x00", 3, [["default/b", "2"], ["default/c", "3"]])])
    assert repeated.valid is False and "lacks default/a" in repeated.reason


def test_an_expired_continue_needs_a_fresh_token():
    fresh = page(3, "default/a\x00", 0, [], -1, "default/a\x00", code=410)
    assert check_api_pagination([*store(), fresh]).valid is True
    stale = page(3, "default/a\x00", 0, [], code=410)
    verdict = check_api_pagination([*store(), stale])
    assert verdict.valid is False and "without a fresh continue token" in verdict.reason
    # continuing with the fresh token: the latest revision, judged as a new snapshot
    assert check_api_pagination([*store(), fresh, page(-1, "default/a\x00", 5, [["default/b", "4"], ["default/c", "3"]])]).valid is True


def test_no_page_is_nothing_to_judge():
    verdict = check_api_pagination(store())
    assert verdict.valid is None and verdict.details["nothing_to_judge"]

"""Paginated lists (``limit`` / ``continue``) served by the HTTPS front, judged from the
journal: a list read in pages is one snapshot.

What Kubernetes promises ("Retrieving large results sets in chunks",
https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks;
``staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`` ``GetList`` and
``etcd3/errors.go`` ``handleCompactedErrorForPaging``): the first page is read at a
revision R and its continue token names R and the key after its last item; every later
page is read at exactly R, so that the pages together are the list at R; when R has been
compacted the answer is 410 Expired whose Status carries a fresh continue token with
resourceVersion -1 (continuing with it reads the rest at the latest revision: an
inconsistent list the client opts into, and a new snapshot from there).

Input: the front's ``list-page`` events (:mod:`chaoskube.apiserver.http.front`): the
client, resource, namespace, selectors, ``limit``, the token's revision ``token_rv``
(None on a first page, -1 for a fresh token) and ``start`` key, the answer's ``code``,
``resource_version``, ``items`` (``[key, resourceVersion]``) and the next token's
``next_rv`` / ``next_start`` (absent on the last page); and the store's history from the
``raft-apply`` events (:class:`~chaoskube.checkers.replay.StoreHistory`).

Rules, per answered page:

1. **At the token's revision**: a page continued with a token for revision R > 0 is
   answered at R (its ``resource_version``), or 410.
2. **One snapshot**: every page's next token names the revision the page was read at.
3. **The store's list**: a page's items are exactly the objects the list selects that the
   store held at its revision with keys from ``start`` on, in key order, each at its
   version then, up to the next token's key (all of them on the last page).
4. **410 with a fresh token**: a continued page answered 410 carries a continue token
   with revision -1 from the same key.

Answers False with the first violated page (evidence: the page and, for rule 3, the
store's version), unknown when the front served no page (nothing to judge), True
otherwise with counts.

Limits: whether a 410 was due (the revision really compacted) is not judged here; a
first page's revision against the time it was served is api-linearizability's (the same
read is journaled as ``api-read``); pages of a list the simulated clients read (they do
not paginate) are not journaled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaoskube.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from chaoskube.checkers.replay import StoreHistory
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_api_pagination"]

Event = dict[str, Any]


def check_api_pagination(events: Sequence[Event]) -> Verdict:
    """Judge every page the HTTPS front served (module docstring)."""
    pages = [event for event in events if event.get("type") == "list-page"]
    counts = {"pages": len(pages), "continued": 0, "expired": 0, "judged_items": 0}
    if not pages:
        return nothing_to_judge("the HTTPS front served no paginated list: nothing to judge", (), counts)
    store = StoreHistory(events)
    for page in pages:
        code = page.get("code")
        token_rv = page.get("token_rv")
        if token_rv is not None:
            counts["continued"] += 1
        if code == 410 and token_rv is not None:
            counts["expired"] += 1
            if page.get("next_rv") != -1 or page.get("next_start") != page.get("start"):
                return Verdict(False, f"{page['client']}: a continued list of {page['resource']} answered 410 without a fresh continue token (resourceVersion -1 from {page.get('start')!r})", (page,), counts)
            continue
        if code != 200:
            continue
        answered = page["resource_version"]
        if token_rv is not None and token_rv > 0 and answered != token_rv:
            return Verdict(False, f"{page['client']}: a page of {page['resource']} continued from revision {token_rv} was read at revision {answered} (the pages mix revisions)", (page,), counts)
        if "next_rv" in page and page["next_rv"] != answered:
            return Verdict(False, f"{page['client']}: a page of {page['resource']} read at revision {answered} handed out a continue token for revision {page['next_rv']} (the next pages would mix revisions)", (page,), counts)
        problem = _judge_items(page, store)
        if problem is not None:
            return Verdict(False, problem[0], problem[1], counts)
        counts["judged_items"] += len(page.get("items") or ())
    return Verdict(
        True,
        f"{counts['pages']} page(s) of paginated lists ({counts['continued']} continued, {counts['expired']} expired with a fresh token): "
        f"each at its token's revision, {counts['judged_items']} item(s) equal to the store's then",
        (), counts,
    )


def _judge_items(page: Event, store: StoreHistory) -> tuple[str, tuple[Any, ...]] | None:
    resource, revision = page["resource"], page["resource_version"]
    try:
        labels = parse_label_selector(page["label_selector"]) if page.get("label_selector") else None
        fields = parse_field_selector(page["field_selector"], resource) if page.get("field_selector") else None
    except SelectorError:
        return None
    prefix = f"{page['namespace']}/" if page.get("namespace") else ""
    start, end = page.get("start") or "", page.get("next_start")
    expected: list[list[str]] = []
    for key in store.keys(resource):
        if (prefix and not key.startswith(prefix)) or key < start or (end is not None and key >= end):
            continue
        version = store.live_at(resource, key, revision)
        if version is None:
            continue
        if labels is not None or fields is not None:
            obj = store.typed(resource, key, version)
            if obj is None or (labels is not None and not labels.matches(obj)):
                continue
            if fields is not None and not fields.matches_fields(store.selectable(resource, key, version)):
                continue
        expected.append([key, str(version.revision)])
    got = [[str(key), str(version)] for key, version in page.get("items") or ()]
    if got == expected:
        return None
    held = dict(map(tuple, expected))
    for key, version in got:
        if held.get(key) != version:
            then = f"version {held[key]}" if key in held else "nothing the list selects"
            return f"{page['client']}: a page of {resource} at revision {revision} holds {key} at version {version}; the store held {then} then", (page, {"type": "store", "revision": revision, "object": f"{resource}/{key}", "version": held.get(key)})
    listed = {key for key, _ in got}
    missing = [key for key, _ in expected if key not in listed]
    if missing:
        return f"{page['client']}: a page of {resource} at revision {revision} lacks {missing[0]}, which the store held then (version {held[missing[0]]})", (page,)
    return f"{page['client']}: a page of {resource} at revision {revision} lists its items out of key order", (page,)

"""apimachinery's strategic merge patch tests, applied, transcribed as data.

Upstream: kubernetes/apimachinery v0.30.9 (3845a996583ae758b25c843ae62d3399d114b67f),
``pkg/util/strategicpatch/patch_test.go``. The tables are extracted verbatim (their YAML,
parsed) into ``tests/api/data/strategicpatch_upstream.json``:

- ``customStrategicMergePatchTestCaseData`` (18 YAML cases) and
  ``customStrategicMergePatchRawTestCases`` (10; the ``$setElementOrder`` mismatch rows) of
  TestCustomStrategicMergePatch: the two-way patch applied to the original;
- ``createStrategicMergePatchTestCaseData`` (22 YAML cases) and
  ``strategicMergePatchRawTestCases`` (92) of TestStrategicMergePatch: the two-way patch
  applied to the original, the three-way patch applied to the current object;
- ``replaceRawExtensionPatchTestCases`` (2) of TestReplaceWithRawExtension.

Upstream checks two things per case: that CreateTwoWayMergePatch / CreateThreeWayMergePatch
compute the expected patch, and that StrategicMergePatch applies it to the expected result.
The model is a server: it applies patches and never computes them (kubectl does), so only the
application half runs here; as upstream, the YAML tables' objects are first sorted with
``sortMergeListsByName``, the raw tables' are taken as written. The schema is the tests'
``MergeItem`` struct with its struct tags (``mergingList`` merge by name, ``mergingIntList``
merge, ``retainKeysMap`` retainKeys, ``retainKeysMergingList`` merge+retainKeys,
``replacingItem`` replace).

Not taken: TestSortMergeLists (``sortMergeListsByName`` itself, a test helper of upstream's),
TestNumberConversion (precision of the fake precision schema), TestUnknownField (patch
computation), and the patch-computation half of every case (see above).

144 upstream cases, 260 test items (a case's two-way and three-way applications): 260 pass,
none left in :data:`EXPECTED_FAILURES`. Before, 17 failed: ``$patch: delete`` in a map
deleted the key (upstream empties the map), a ``replace`` strategy field was merged, a
merging list on a struct-typed field lost its element schema, ``$setElementOrder`` placed
the elements it does not name after the named ones (upstream interleaves them by the
server's order, including the order its in-place slice edits leave), and a patch list out of
the ``$setElementOrder`` order was accepted (upstream: "doesn't match"). The application
path is now ``patch.go`` function for function.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from chaoskube.api import strategic
from chaoskube.api.patch import PatchError
from chaoskube.api.strategic import PatchMeta, strategic_merge_patch

DATA = json.loads((Path(__file__).parent / "data" / "strategicpatch_upstream.json").read_text())


class RetainKeysMergeItem(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    value: str = ""
    other: str = ""
    simple_map: dict[str, str] = {}
    merging_int_list: list[int] = []
    merging_list: list[MergeItem] = []
    non_merging_list: list[MergeItem] = []


class MergeItem(msgspec.Struct, rename="camel", omit_defaults=True):
    """The tests' ``MergeItem``; its patch metadata is :data:`MERGE_ITEM_META`."""

    name: str = ""
    value: str = ""
    other: str = ""
    merging_list: list[MergeItem] = []
    non_merging_list: list[MergeItem] = []
    merging_int_list: list[int] = []
    non_merging_int_list: list[int] = []
    merge_item_ptr: MergeItem | None = None
    simple_map: dict[str, str] = {}
    replacing_item: Any = None
    retain_keys_map: RetainKeysMergeItem | None = None
    retain_keys_merging_list: list[MergeItem] = []


MERGE_ITEM_META = {
    ("MergeItem", "mergingList"): PatchMeta(("merge",), "name"),
    ("MergeItem", "mergingIntList"): PatchMeta(("merge",)),
    ("MergeItem", "mergeItemPtr"): PatchMeta(("merge",), "name"),
    ("MergeItem", "replacingItem"): PatchMeta(("replace",)),
    ("MergeItem", "retainKeysMap"): PatchMeta(("retainKeys",)),
    ("MergeItem", "retainKeysMergingList"): PatchMeta(("merge", "retainKeys"), "name"),
    ("RetainKeysMergeItem", "mergingIntList"): PatchMeta(("merge",)),
    ("RetainKeysMergeItem", "mergingList"): PatchMeta(("merge",), "name"),
}


@pytest.fixture(autouse=True)
def merge_item_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, meta in MERGE_ITEM_META.items():
        monkeypatch.setitem(strategic.PATCH_META, key, meta)


# --- sortMergeListsByName (upstream's helper, so that the YAML tables compare as upstream's)


def _go_v(value: Any) -> str:
    """``fmt.Sprintf("%v", x)`` of a JSON scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _struct_of(cls: Any, field: str) -> Any:
    info = strategic.field_type(msgspec.inspect.type_info(cls), field) if cls is not None else None
    info = strategic._unwrap(info) if info is not None else None
    if isinstance(info, msgspec.inspect.ListType):
        info = strategic._unwrap(info.item_type)
    return info.cls if isinstance(info, msgspec.inspect.StructType) else None


def sort_merge_lists_by_name(value: dict[str, Any], cls: Any) -> dict[str, Any]:
    out = {}
    for key, item in value.items():
        if key == "$retainKeys" or key.startswith("$deleteFromPrimitiveList/"):
            item = sorted(item, key=_go_v)
        elif key.startswith("$setElementOrder/") or key == "$patch":
            pass
        elif isinstance(item, dict):
            item = sort_merge_lists_by_name(item, _struct_of(cls, key))
        elif isinstance(item, list):
            meta = strategic.PATCH_META.get((cls.__name__, key), PatchMeta(())) if cls is not None else PatchMeta(())
            if "merge" in meta.strategies and item:
                if isinstance(item[0], dict):
                    sub = _struct_of(cls, key)
                    item = sorted((sort_merge_lists_by_name(element, sub) for element in item), key=lambda element: _go_v(element.get(meta.merge_key)))
                else:
                    unique: list[Any] = []
                    for element in item:
                        if element not in unique:
                            unique.append(element)
                    item = sorted(unique, key=_go_v)
        out[key] = item
    return out


def _apply(original: Any, patch: Any) -> Any:
    return strategic_merge_patch(original if original is not None else {}, patch if patch is not None else {}, MergeItem)


# Rows we do not pass, with the reason (also in docs/api-server.md).
EXPECTED_FAILURES: dict[str, str] = {}


def _params(rows: list[dict[str, Any]], table: str, parts: tuple[str, ...]) -> list[Any]:
    params = []
    for index, row in enumerate(rows):
        for part in parts:
            name = f"{table}/{row['description']}/{part}"
            reason = EXPECTED_FAILURES.get(name)
            params.append(pytest.param(row, part, id=f"{index}:{row['description']}/{part}", marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else []))
    return params


def _check(original: Any, patch: Any, expected: Any, expected_error: str | None) -> None:
    if expected_error:
        with pytest.raises(PatchError) as caught:
            _apply(original, patch)
        assert expected_error in str(caught.value)
        return
    assert _apply(original, patch) == expected


def _yaml_case(row: dict[str, Any], part: str) -> None:
    def sort(value: Any) -> Any:
        return sort_merge_lists_by_name(copy.deepcopy(value), MergeItem) if isinstance(value, dict) else value

    if part == "TwoWay":
        expected = row.get("twoWayResult") or row.get("modified")
        _check(sort(row.get("original")), sort(row.get("twoWay")), sort(expected), None)
    else:
        if not row.get("result"):
            pytest.skip("a conflict without a result: upstream checks only that the three-way patch is refused")
        _check(sort(row.get("current")), sort(row.get("threeWay")), sort(row.get("result")), None)


def _raw_case(row: dict[str, Any], part: str) -> None:
    if part == "TwoWay":
        expected = row.get("TwoWayResult") if row.get("TwoWayResult") is not None else row.get("Modified")
        _check(row.get("Original"), row.get("TwoWay"), expected, row.get("ExpectedError"))
    else:
        if row.get("Result") is None:
            pytest.skip("a conflict without a result: upstream checks only that the three-way patch is refused")
        _check(row.get("Current"), row.get("ThreeWay"), row.get("Result"), row.get("ExpectedError"))


@pytest.mark.parametrize(("row", "part"), _params(DATA["customStrategicMergePatchTestCaseData"], "custom", ("TwoWay",)))
def test_custom_strategic_merge_patch(row: dict[str, Any], part: str) -> None:
    _yaml_case(row, part)


@pytest.mark.parametrize(("row", "part"), _params(DATA["customStrategicMergePatchRawTestCases"], "customRaw", ("TwoWay",)))
def test_custom_strategic_merge_patch_raw(row: dict[str, Any], part: str) -> None:
    _raw_case(row, part)


@pytest.mark.parametrize(("row", "part"), _params(DATA["createStrategicMergePatchTestCaseData"], "create", ("TwoWay", "ThreeWay")))
def test_strategic_merge_patch(row: dict[str, Any], part: str) -> None:
    _yaml_case(row, part)


@pytest.mark.parametrize(("row", "part"), _params(DATA["strategicMergePatchRawTestCases"], "raw", ("TwoWay", "ThreeWay")))
def test_strategic_merge_patch_raw(row: dict[str, Any], part: str) -> None:
    _raw_case(row, part)


@pytest.mark.parametrize(("row", "part"), _params(DATA["replaceRawExtensionPatchTestCases"], "replaceRawExtension", ("TwoWay", "ThreeWay")))
def test_replace_with_raw_extension(row: dict[str, Any], part: str) -> None:
    _raw_case(row, part)

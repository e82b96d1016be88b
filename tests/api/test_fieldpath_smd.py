"""structured-merge-diff's merge table tests, every row, against chaoskube.api.fieldpath.

The rows are transcribed by ``transcribe_smd.py`` into ``data/smd_merge_cases.json`` (source
commit named in the file); the fixture below is ``internal/fixture/state.go``: operations
run in order on one live object, then the live object and the managers are compared with
the row's ``Object`` and ``Managed`` (sets and API versions; ``Difference`` ignores whether
a manager applied), and no manager may be left with an empty set. Rows this model cannot
run are listed in ``EXPECTED_FAILURES`` with the reason (strict xfail)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from chaoskube.api import fieldpath as fp

DATA = json.loads((Path(__file__).parent / "data" / "smd_merge_cases.json").read_text())

#: (test, row) -> why this model does not pass it.
EXPECTED_FAILURES: dict[tuple[str, str], str] = {}
#: Whole tables not runnable here, with the reason.
TABLE_LIMITS = {
}


def _fix_tabs(text: str) -> str:
    """``FixTabsOrDie``: the common leading tabs removed."""
    lines = text.split("\n")
    if lines and not lines[0].strip():
        lines = lines[1:]
    return textwrap.dedent("\n".join(line.replace("\t", "    ") if not line.strip() else line for line in lines)).replace("\t", "  ")


def _load(text: str):
    return yaml.safe_load(_fix_tabs(text)) if text.strip() else None


def _element(text: str) -> tuple:
    return fp.deserialize_element(text)


def _set(paths) -> frozenset:
    return frozenset(tuple(_element(e) for e in path) for path in paths)


def _parser(name: str):
    if name == "DeducedParser":
        schema, ref = fp.deduced_schema()
        return schema, lambda version: ref
    spec = DATA["parsers"][name]
    schema = fp.parse_schema(yaml.safe_load(spec["schema"]))
    root = spec["type"]
    return schema, (lambda version: fp.TypeRef(root)) if root else (lambda version: fp.TypeRef(version))


def _repeating(schema):
    """``repeatingConverter`` (multiple_appliers_test.go): each key of the YAML form is
    its first letter repeated N times for version vN; values are dropped."""

    def convert(value, from_version, to_version):
        if len(to_version) < 2 or to_version[0] != "v" or not to_version[1:].isdigit():
            raise fp.MissingVersion(to_version)
        count = int(to_version[1:])
        text = yaml.safe_dump(value, default_flow_style=False, sort_keys=True)
        lines = text.split("\n")
        out = lines[0]
        for line in lines[1:]:
            spaces = len(line) - len(line.lstrip(" "))
            if spaces == 0:
                break
            out += f"\n{' ' * spaces}{line[spaces] * count}:"
        return yaml.safe_load(out)

    return convert


def _renaming(value, from_version, to_version):
    """``renamingConverter`` (multiple_appliers_test.go): a key ending in the version it is
    typed at gets the other version's suffix (``scalarField_v1`` -> ``scalarField_v2``)."""
    if isinstance(value, dict):
        return {(key[: -len(from_version)] + to_version if key.endswith(from_version) else key): _renaming(item, from_version, to_version) for key, item in value.items()}
    if isinstance(value, list):
        return [_renaming(item, from_version, to_version) for item in value]
    return value


def _reliant(value, from_version, to_version):
    """``reliantFieldsConverter``: v2 -> v1 needs ``required_field_bar`` (a conversion error,
    not a missing version, without it)."""
    text = yaml.safe_dump(value, default_flow_style=False, sort_keys=True)
    if to_version == "v1":
        if "required_field_bar" not in text:
            raise ValueError("missing requried field bar")
        text = text.replace("required_field_bar", "field_foo_rely_on_bar")
    elif to_version == "v2":
        text = text.replace("field_foo_rely_on_bar", "required_field_bar")
    else:
        raise fp.MissingVersion(to_version)
    return yaml.safe_load(text)


def _rows():
    for table in DATA["tables"]:
        for name in sorted(table.get("rows") or {}):
            key = (table["test"], name)
            marks = []
            if key in EXPECTED_FAILURES:
                marks.append(pytest.mark.xfail(strict=True, reason=EXPECTED_FAILURES[key]))
            yield pytest.param(table, name, id=f"{table['test']}/{name}", marks=marks)


def run_case(table: dict, row: dict) -> None:
    schema, type_for = _parser(table["parser"])
    convert = {"repeatingConverter": _repeating(schema), "renamingConverter": _renaming, "reliantFieldsConverter": _reliant}.get(table["converter"].partition("{")[0])
    assert convert is not None or not table["converter"], table["converter"]
    filters = row.get("IgnoreFilter") or row.get("IgnoredFields") or {}
    ignored = {version: _set(spec["exclude"] if isinstance(spec, dict) else spec) for version, spec in filters.items()}
    def updater_for(schema, type_for):
        return fp.Updater(schema, type_for, convert, ignored=ignored, return_input_on_noop=bool(row.get("ReturnInputOnNoop")))

    updater = updater_for(schema, type_for)
    live = None
    live_version = ""
    managers: dict = {}
    for index, op in enumerate(row["Ops"]):
        kind = op["op"]
        if kind == "ChangeParser":  # fixture/state.go: the schema changes under the live object
            schema, type_for = _parser(op["Parser"])
            updater = updater_for(schema, type_for)
            continue
        version = op.get("APIVersion", "")
        if kind not in ("Apply", "ForceApply", "Update", "ExtractApply"):
            raise NotImplementedError(kind)
        if live is not None and live_version and live_version != version:
            live = updater.convert(live, live_version, version)
        obj = _load(op["Object"])
        if kind == "ExtractApply" and live is not None:
            # ExtractApplyObject (fixture/state.go): the manager's fields extracted from the
            # live object, the configuration merged on top, force-applied
            owned = managers.get(op["Manager"])
            if owned is not None:
                assert owned.api_version == version, "unable to extract across versions"
            extracted = fp.extract_items(live, fp.leaves(owned.set) if owned is not None else frozenset(), schema, type_for(version))
            obj = fp.merge_values(extracted, obj, schema, type_for(version))
            obj = None if obj is fp.MISSING else obj
            kind = "ForceApply"
        elif kind == "ExtractApply":
            kind = "ForceApply"
        if kind == "Update":
            live, managers = updater.update(live, obj, version, managers, op["Manager"])
        else:
            try:
                new, managers = updater.apply(live, obj, version, managers, op["Manager"], kind == "ForceApply")
            except fp.ConflictError as error:
                if op.get("Conflicts") is None:
                    raise AssertionError(f"operation {index}: unexpected conflicts {error}") from None
                got = {(c.manager, c.path) for c in error.conflicts}
                want = {(c.get("manager", c.get("Manager")), tuple(_element(e) for e in c.get("path", c.get("Path")))) for c in op["Conflicts"]}
                assert got == want, f"operation {index}: conflicts {got} != {want}"
                continue
            if op.get("Conflicts"):
                raise AssertionError(f"operation {index}: expected conflicts {op['Conflicts']}, got none")
            if new is not fp.NO_CHANGE:
                live = new
        live_version = version
    if row.get("Object"):
        expected = _load(row["Object"])
        if live_version and row.get("APIVersion") and live_version != row["APIVersion"]:
            live = updater.convert(live, live_version, row["APIVersion"])
        comparison = fp.compare(live, expected, schema, type_for(row.get("APIVersion", "")))
        assert comparison.empty(), f"live {live!r} != expected {expected!r}: {comparison}"
    if row.get("Managed") is not None:
        want = {m: (_set(v["set"]), v["apiVersion"]) for m, v in row["Managed"].items()}
        got = {m: (v.set, v.api_version) for m, v in managers.items()}
        diff = {m for m in set(want) | set(got) if (m in want) != (m in got) and (want.get(m, (frozenset(),))[0] or got.get(m, (frozenset(),))[0]) or (m in want and m in got and want[m] != got[m])}
        assert not diff, "managers differ: " + "; ".join(f"{m}: want {fp.set_string(want.get(m, (frozenset(), ''))[0])!r}@{want.get(m, ('', ''))[1]} got {fp.set_string(got.get(m, (frozenset(), ''))[0])!r}@{got.get(m, ('', ''))[1]}" for m in sorted(diff))
    for manager, entry in managers.items():
        assert entry.set, f"manager {manager} left with an empty set"


#: Tables whose every row must fail (``if test.Test(parser) == nil { t.Fatal("Should fail") }``).
TABLES_EXPECTING_ERRORS = {"TestDefaultKeysFlatErrors"}


@pytest.mark.parametrize(("table", "name"), list(_rows()))
def test_smd_merge_row(table: dict, name: str) -> None:
    if table["test"] in TABLES_EXPECTING_ERRORS:
        with pytest.raises((fp.ListItemError, fp.ConflictError, AssertionError)):
            run_case(table, table["rows"][name])
        return
    run_case(table, table["rows"][name])


def test_smd_tables_not_runnable_are_listed() -> None:
    """A table the transcriber could not evaluate is a listed limit, never silently lost."""
    for table in DATA["tables"]:
        if "rows" not in table:
            assert table["test"] in TABLE_LIMITS, f"{table['test']}: {table['error']}"
    assert sum(len(table.get("rows") or ()) for table in DATA["tables"]) >= 319

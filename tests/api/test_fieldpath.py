"""chaoskube.api.fieldpath: structured-merge-diff's non-table tests (merge/conflict_test.go,
merge/obsolete_versions_test.go) and the fieldsV1 notation (fieldpath/serialize.go)."""

from __future__ import annotations

import pytest
import yaml

from chaoskube.api import fieldpath as fp


def P(*elements):
    return tuple(element if isinstance(element, tuple) else fp.field_element(element) for element in elements)


def KBF(*pairs):
    return fp.key_element(*zip(pairs[0::2], pairs[1::2]))


def _two_managers():
    return {
        "Bob": fp.VersionedSet(frozenset({P("key"), P("list", KBF("key", "a", "id", 2), "id")}), "v1", False),
        "Alice": fp.VersionedSet(frozenset({P("value"), P("list", KBF("key", "a", "id", 2), "key")}), "v1", False),
    }


def test_new_from_sets() -> None:
    """conflict_test.go TestNewFromSets."""
    got = fp.ConflictError(fp.conflicts_from_managers(_two_managers()))
    assert str(got) == '''conflicts with "Alice":
- .value
- .list[id=2,key="a"].key
conflicts with "Bob":
- .key
- .list[id=2,key="a"].id'''


def test_to_set() -> None:
    """conflict_test.go TestToSet."""
    conflicts = fp.conflicts_from_managers(_two_managers())
    assert {conflict.path for conflict in conflicts} == {P("key"), P("value"), P("list", KBF("key", "a", "id", 2), "id"), P("list", KBF("key", "a", "id", 2), "key")}


def test_conflicts_from_managers() -> None:
    """conflict_test.go TestConflictsFromManagers."""
    got = fp.ConflictError(fp.conflicts_from_managers({"Bob": fp.VersionedSet(frozenset({
        P("obj", "template", "obj", "list", KBF("name", "a"), "id"), P("obj", "template", "obj", "list", KBF("name", "a"), "key"),
    }), "v1", False)}))
    assert str(got) == '''conflicts with "Bob":
- .obj.template.obj.list[name="a"].id
- .obj.template.obj.list[name="a"].key'''


class _SpecificVersions:
    """obsolete_versions_test.go specificVersionConverter."""

    def __init__(self, *versions: str) -> None:
        self.accepted = set(versions)

    def __call__(self, value, from_version, to_version):
        if to_version not in self.accepted:
            raise fp.MissingVersion(to_version)
        return value


def test_obsolete_versions() -> None:
    """obsolete_versions_test.go TestObsoleteVersions: managers at a version that no longer
    converts are dropped."""
    schema, ref = fp.deduced_schema()
    converter = _SpecificVersions("v1", "v2")
    updater = fp.Updater(schema, lambda version: ref, converter)
    live, managers = updater.update(None, {"v1": 0}, "v1", {}, "v1")
    live, managers = updater.update(live, {"v1": 0, "v2": 0}, "v2", managers, "v2")
    converter.accepted = {"v2", "v3"}
    live, managers = updater.update(live, {"v1": 0, "v2": 0, "v3": 0}, "v3", managers, "v3")
    assert {m: (v.set, v.api_version) for m, v in managers.items()} == {"v2": (frozenset({P("v2")}), "v2"), "v3": (frozenset({P("v3")}), "v3")}


def test_apply_obsolete_version() -> None:
    """obsolete_versions_test.go TestApplyObsoleteVersion: a manager's last applied set at
    a version gone is not pruned."""
    schema = fp.parse_schema(yaml.safe_load("""types:
- name: sets
  map:
    fields:
    - name: list
      type:
        list:
          elementType:
            scalar: string
          elementRelationship: associative"""))
    converter = _SpecificVersions("v1")
    updater = fp.Updater(schema, lambda version: fp.TypeRef("sets"), converter)
    live, managers = updater.apply(None, {"list": ["a", "b", "c", "d"]}, "v1", {}, "apply", False)
    converter.accepted = {"v2"}
    new, managers = updater.apply(live, {"list": ["a"]}, "v2", managers, "apply", False)
    live = live if new is fp.NO_CHANGE else new
    assert fp.compare(live, {"list": ["a", "b", "c", "d"]}, schema, fp.TypeRef("sets")).empty()


def test_fields_v1_notation_round_trips() -> None:
    """fieldpath/serialize.go: ``f:``, ``k:``, ``v:``, ``i:`` and ``.`` for a member with children."""
    paths = frozenset({
        P("metadata", "labels", "app"),
        P("spec", "containers", KBF("name", "web")),
        P("spec", "containers", KBF("name", "web"), "image"),
        P("metadata", "finalizers", fp.value_element("x")),
        P("list", fp.index_element(0)),
    })
    document = fp.fields_v1(paths)
    assert document == {
        "f:list": {"i:0": {}},
        "f:metadata": {"f:finalizers": {'v:"x"': {}}, "f:labels": {"f:app": {}}},
        "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}},
    }
    assert fp.set_from_fields_v1(document) == paths
    assert fp.path_string(P("spec", "containers", KBF("name", "web"), "image")) == '.spec.containers[name="web"].image'
    with pytest.raises(ValueError):
        fp.set_from_fields_v1({"i:oops": {}})
    assert fp.set_from_fields_v1({"x:future": {"f:a": {}}}) == frozenset()  # an unknown qualifier is dropped


VERSION_DOESNT_MATCH_TYPENAME = """types:
- name: TypeV1
  map:
    fields:
      - name: field_foo_rely_on_bar
        type:
          scalar: string
      - name: common_field
        type:
          scalar: string
- name: TypeV2
  map:
    fields:
      - name: required_field_bar
        type:
          scalar: string
      - name: common_field
        type:
          scalar: string
"""


def test_version_doesnt_match_typename() -> None:
    """multiple_appliers_test.go TestVersionDoesntMatchTypename: versions whose types have
    other names, a converter that needs a field to convert to v1; apply at v2, v1, v2."""
    schema = fp.parse_schema(yaml.safe_load(VERSION_DOESNT_MATCH_TYPENAME))

    def type_for(version):
        return fp.TypeRef({"v1": "TypeV1", "v2": "TypeV2"}[version])

    def convert(value, from_version, to_version):
        text = yaml.safe_dump(value, default_flow_style=False, sort_keys=True)
        if to_version == "v1":
            if "required_field_bar" not in text:
                raise ValueError("missing requried field bar")
            return yaml.safe_load(text.replace("required_field_bar", "field_foo_rely_on_bar"))
        if to_version == "v2":
            return yaml.safe_load(text.replace("field_foo_rely_on_bar", "required_field_bar"))
        raise fp.MissingVersion(to_version)

    updater = fp.Updater(schema, type_for, convert)
    for _ in range(10):
        live, managers = {}, {}
        new, managers = updater.apply(live, {"required_field_bar": "a"}, "v2", managers, "v2_applier", False)
        live = live if new is fp.NO_CHANGE else new
        live = convert(live, "v2", "v1")
        new, managers = updater.apply(live, {"common_field": "b"}, "v1", managers, "v1_applier", False)
        live = live if new is fp.NO_CHANGE else new
        live = convert(live, "v1", "v2")
        new, managers = updater.apply(live, {"required_field_bar": "b"}, "v2", managers, "v2_applier", False)
        live = live if new is fp.NO_CHANGE else new
        assert fp.compare(live, {"required_field_bar": "b", "common_field": "b"}, schema, type_for("v2")).empty()
        assert {m: (v.set, v.api_version, v.applied) for m, v in managers.items()} == {
            "v2_applier": (frozenset({P("required_field_bar")}), "v2", True),
            "v1_applier": (frozenset({P("common_field")}), "v1", True),
        }


_NAN = float("nan")


@pytest.mark.parametrize(("left", "right"), [
    ({"a": True}, {"a": 1}), ([1, 2.0], [1, 2]), ({"a": [True, False]}, {"a": [1, 0]}), ({"x": {"y": 1.0}}, {"x": {"y": 1}}),
    ([None], [None]), ([2**63 - 1], [2**63 - 1]), ([-(2**63)], [-(2**63)]), ([2**64 - 1], [2**64 - 1]), ([2**64], [2**64]),
    ([_NAN], [_NAN]), ([1.5], [1.5]), ({"a": 1e20}, {"a": 10**20}), ([True], [True]), ({"a": []}, {"a": []}), ([float("inf")], [float("inf")]),
])
def test_compare_shortcut_answers_as_the_canonical_encoding(left: object, right: object) -> None:
    # compare skips a subtree when it is == and encodes alike; _same_json answers that
    # without encoding: it must agree with _canon, raising where _canon raises
    def outcome(check):  # noqa: ANN001, ANN202
        try:
            return check()
        except TypeError:
            return "raises"

    assert left == right
    assert outcome(lambda: fp._same_json(left, right)) == outcome(lambda: fp._canon(left) == fp._canon(right))

"""apimachinery's field manager tests (``k8s.io/apimachinery/pkg/util/managedfields/internal``
``*_test.go``), transcribed against chaoskube.api.managedfields.

The harness is ``internal/testing/testfieldmanager.go``'s ``TestFieldManagerImpl``: one live
object (at first ``{apiVersion, kind}``), ``Apply`` / ``Update`` / ``UpdateNoErrors`` replace it
with what the field manager answers; its chain is the default one without capManagers,
wrapped by what a test adds outside. The upstream tests type objects with the OpenAPI
``swagger.json`` of kubernetes; here with the built-in kinds' schemas
(:func:`builtin_schema`), objects as unstructured (no typed completion). Time: upstream sleeps a
second between writes; here the clock is a counter of whole seconds that a test moves."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from chaoskube.api import fieldpath as fp
from chaoskube.api.managedfields import (
    ApplyConflict,
    ApplyError,
    BuildManagerInfoManager,
    CapManagersManager,
    FieldManager,
    LAST_APPLIED_ANNOTATION,
    LastAppliedUpdater,
    Managed,
    ManagedFieldsUpdater,
    SkipNonAppliedManager,
    builtin_schema,
    conflict_message,
    decode_managed_fields,
    default_chain,
    encode_managed_fields,
    manager_identifier,
    print_manager,
    sort_encoded_managed_fields,
)
from chaoskube.api.objects import ConfigMap, Deployment, Pod

KINDS = {("v1", "Pod"): Pod, ("v1", "ConfigMap"): ConfigMap, ("apps/v1", "Deployment"): Deployment}


class Clock:
    def __init__(self) -> None:
        self.seconds = 0

    def __call__(self) -> str:
        return f"2021-01-01T00:{self.seconds // 60:02d}:{self.seconds % 60:02d}Z"

    def sleep(self) -> None:
        self.seconds += 1


class Harness:
    """``NewTestFieldManagerImpl(typeConverter, gvk, subresource, chainFieldManager)``."""

    def __init__(self, api_version: str, kind: str, wrap=None, subresource: str = "") -> None:
        schema, root = builtin_schema(KINDS[(api_version, kind)])
        self.clock = Clock()
        chain = default_chain(schema, root, api_version, kind, subresource, clock=self.clock, max_update_managers=None)
        if wrap is not None:
            chain = wrap(chain)
        self.field_manager = FieldManager(api_version=api_version, kind=kind, subresource=subresource, chain=chain, clock=self.clock)
        self.empty = {"apiVersion": api_version, "kind": kind}
        self.live = copy.deepcopy(self.empty)

    def reset(self) -> None:
        self.live = copy.deepcopy(self.empty)

    def apply(self, obj, manager: str, force: bool = False) -> None:
        self.live = self.field_manager.apply(self.live, copy.deepcopy(obj), manager, force)

    def update(self, obj, manager: str) -> None:
        self.live = self.field_manager.update(self.live, copy.deepcopy(obj), manager)

    def update_no_errors(self, obj, manager: str) -> None:
        self.live = self.field_manager.update_no_errors(self.live, copy.deepcopy(obj), manager)

    def managed_fields(self) -> list[dict]:
        return list((self.live.get("metadata") or {}).get("managedFields") or [])


def P(*elements):
    return tuple(("f", element) for element in elements)


# ----------------------------------------------------------------------------- managedfields_test.go
def _entries(text: str):
    return yaml.safe_load(text)


VALID = """- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:field: {}
  manager: foo
  operation: Apply
"""


@pytest.mark.parametrize(("text", "valid"), [
    (VALID, True),
    (VALID.replace("fieldsType: FieldsV1", "fieldsType: FieldsV2"), False),  # TestHasFieldsType: invalid fieldsType V2
    (VALID.replace("  fieldsType: FieldsV1\n", ""), False),  # missing fieldsType
    (VALID.replace("- apiVersion: v1\n  fieldsType", "- fieldsType"), False),  # TestHasAPIVersion: missing apiVersion
    (VALID.replace("operation: Apply", "operation: Invalid"), False),  # TestHasOperation: invalid operation
    (VALID.replace("  operation: Apply\n", ""), False),  # missing operation
], ids=["valid", "fieldsType-v2", "no-fieldsType", "no-apiVersion", "invalid-operation", "no-operation"])
def test_decode_managed_fields_validates_entries(text: str, valid: bool) -> None:
    """TestHasFieldsType, TestHasAPIVersion, TestHasOperation."""
    if valid:
        decode_managed_fields(_entries(text))
    else:
        with pytest.raises(ApplyError):
            decode_managed_fields(_entries(text))


ROUND_TRIPS = [
    "null\n",
    """- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    v:3:
      f:alsoPi: {}
    v:3.1415:
      f:pi: {}
    v:false:
      f:notTrue: {}
  manager: foo
  operation: Update
  time: "2001-02-03T04:05:06Z"
- apiVersion: v1beta1
  fieldsType: FieldsV1
  fieldsV1:
    i:5:
      f:i: {}
  manager: foo
  operation: Update
  time: "2011-12-13T14:15:16Z"
""",
    """- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:spec:
      f:containers:
        k:{"name":"c"}:
          f:image: {}
          f:name: {}
  manager: foo
  operation: Apply
""",
    """- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:apiVersion: {}
    f:kind: {}
    f:metadata:
      f:labels:
        f:app: {}
      f:name: {}
    f:spec:
      f:replicas: {}
      f:selector:
        f:matchLabels:
          f:app: {}
      f:template:
        f:medatada:
          f:labels:
            f:app: {}
        f:spec:
          f:containers:
            k:{"name":"nginx"}:
              .: {}
              f:image: {}
              f:name: {}
              f:ports:
                i:0:
                  f:containerPort: {}
  manager: foo
  operation: Update
""",
    """- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:allowVolumeExpansion: {}
    f:apiVersion: {}
    f:kind: {}
    f:metadata:
      f:name: {}
      f:parameters:
        f:resturl: {}
        f:restuser: {}
        f:secretName: {}
        f:secretNamespace: {}
    f:provisioner: {}
  manager: foo
  operation: Apply
""",
    """- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:apiVersion: {}
    f:kind: {}
    f:metadata:
      f:name: {}
    f:spec:
      f:group: {}
      f:names:
        f:kind: {}
        f:plural: {}
        f:shortNames:
          i:0: {}
        f:singular: {}
      f:scope: {}
      f:versions:
        k:{"name":"v1"}:
          f:name: {}
          f:served: {}
          f:storage: {}
  manager: foo
  operation: Update
""",
    """- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:spec:
      f:replicas: {}
  manager: foo
  operation: Update
  subresource: scale
""",
]


def _yaml(value) -> str:
    """sigs.k8s.io/yaml's Marshal: keys sorted, block style, strings quoted as needed."""
    class Dumper(yaml.SafeDumper):
        pass

    def string(dumper, text):  # times are quoted by Go's YAML (they look like timestamps)
        style = '"' if text[:4].isdigit() and "T" in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    Dumper.add_representer(str, string)
    text = yaml.dump(value, Dumper=Dumper, default_flow_style=False, sort_keys=True, width=1000)
    return text.removesuffix("...\n")  # PyYAML ends a lone scalar document with "...": Go's does not


@pytest.mark.parametrize("text", ROUND_TRIPS, ids=range(len(ROUND_TRIPS)))
def test_round_trip_managed_fields(text: str) -> None:
    """TestRoundTripManagedFields: wire form -> sets -> wire form, byte for byte."""
    encoded = encode_managed_fields(decode_managed_fields(_entries(text)))
    assert _yaml(encoded) == text


@pytest.mark.parametrize(("entry", "expected"), [
    ({"apiVersion": "v1", "fieldsV1": {"f:apiVersion": {}}, "manager": "foo", "operation": "Update", "time": "2001-02-03T04:05:06Z"}, '{"manager":"foo","operation":"Update","apiVersion":"v1"}'),
    ({"apiVersion": "v1", "fieldsV1": {"f:apiVersion": {}}, "manager": "foo", "operation": "Apply", "time": "2001-02-03T04:05:06Z"}, '{"manager":"foo","operation":"Apply"}'),
    ({"apiVersion": "v1", "fieldsV1": {"f:apiVersion": {}}, "manager": "foo", "operation": "Apply", "subresource": "scale", "time": "2001-02-03T04:05:06Z"}, '{"manager":"foo","operation":"Apply","subresource":"scale"}'),
])
def test_build_manager_identifier(entry, expected) -> None:
    """TestBuildManagerIdentifier."""
    assert manager_identifier(entry["manager"], entry["operation"], entry["apiVersion"], entry.get("subresource", "")) == expected


def E(manager, operation, time=None, subresource=""):
    entry = {"manager": manager, "operation": operation}
    if time:
        entry["time"] = time
    if subresource:
        entry["subresource"] = subresource
    return entry


T1, T2, T3 = "2001-01-01T01:00:00Z", "2002-01-01T01:00:00Z", "2003-01-01T01:00:00Z"
SORTS = {
    "empty": ([], []),
    "nil": (None, None),
    "remains untouched": ([E("a", "Apply"), E("a", "Update", T1)], [E("a", "Apply"), E("a", "Update", T1)]),
    "manager without time first": ([E("a", "Apply"), E("a", "Apply", T1)], [E("a", "Apply"), E("a", "Apply", T1)]),
    "manager without time first name last": ([E("a", "Apply", T1), E("b", "Apply"), E("a", "Apply")], [E("a", "Apply"), E("b", "Apply"), E("a", "Apply", T1)]),
    "apply first": ([E("a", "Update", T1), E("a", "Apply")], [E("a", "Apply"), E("a", "Update", T1)]),
    "newest last": ([E("c", "Update", T1), E("a", "Apply"), E("c", "Update", T2), E("b", "Apply")], [E("a", "Apply"), E("b", "Apply"), E("c", "Update", T1), E("c", "Update", T2)]),
    "manager last": ([E("c", "Update", T1), E("a", "Apply"), E("d", "Update", T1), E("b", "Apply")], [E("a", "Apply"), E("b", "Apply"), E("c", "Update", T1), E("d", "Update", T1)]),
    "manager sorted": (
        [E("c", "Update", T1), E("a", "Apply"), E("g", "Apply"), E("f", "Update", T2), E("i", "Apply"), E("d", "Update", T2), E("h", "Apply"), E("e", "Update", T3), E("b", "Apply")],
        [E("a", "Apply"), E("b", "Apply"), E("g", "Apply"), E("h", "Apply"), E("i", "Apply"), E("c", "Update", T1), E("d", "Update", T2), E("f", "Update", T2), E("e", "Update", T3)],
    ),
    # upstream's times differ in nanoseconds only; metav1.Time's wire form (what reaches
    # this model) has whole seconds, so the three are equal and sort by manager
    "sort drops nanoseconds": (
        [E("c", "Update", "1999-12-31T00:00:00Z"), E("a", "Update", "1999-12-31T00:00:00Z"), E("b", "Update", "1999-12-31T00:00:00Z")],
        [E("a", "Update", "1999-12-31T00:00:00Z"), E("b", "Update", "1999-12-31T00:00:00Z"), E("c", "Update", "1999-12-31T00:00:00Z")],
    ),
    "entries with subresource field": ([E("a", "Apply", subresource="status"), E("a", "Apply", subresource="scale"), E("a", "Apply")], [E("a", "Apply"), E("a", "Apply", subresource="scale"), E("a", "Apply", subresource="status")]),
}


@pytest.mark.parametrize("name", list(SORTS))
def test_sort_encoded_managed_fields(name: str) -> None:
    """TestSortEncodedManagedFields."""
    given, expected = SORTS[name]
    assert sort_encoded_managed_fields(given) == expected


# ----------------------------------------------------------------------------- conflict_test.go
@pytest.mark.parametrize(("conflicts", "causes", "message"), [
    ([('{"manager":"foo","operation":"Update","apiVersion":"v1","time":"2001-02-03T04:05:06Z"}', P("spec", "replicas"))],
     [(".spec.replicas", 'conflict with "foo" using v1 at 2001-02-03T04:05:06Z')],
     'Apply failed with 1 conflict: conflict with "foo" using v1 at 2001-02-03T04:05:06Z: .spec.replicas'),
    ([('{"manager":"foo","operation":"Update","apiVersion":"v1","time":"2001-02-03T04:05:06Z"}', P("spec", "replicas")),
      ('{"manager":"bar","operation":"Apply"}', P("metadata", "labels", "app"))],
     [(".spec.replicas", 'conflict with "foo" using v1 at 2001-02-03T04:05:06Z'), (".metadata.labels.app", 'conflict with "bar"')],
     'Apply failed with 2 conflicts: conflicts with "bar":\n- .metadata.labels.app\nconflicts with "foo" using v1 at 2001-02-03T04:05:06Z:\n- .spec.replicas'),
    ([('{"manager":"foo","operation":"Update","subresource":"scale","apiVersion":"v1","time":"2001-02-03T04:05:06Z"}', P("spec", "replicas"))],
     [(".spec.replicas", 'conflict with "foo" with subresource "scale" using v1 at 2001-02-03T04:05:06Z')],
     'Apply failed with 1 conflict: conflict with "foo" with subresource "scale" using v1 at 2001-02-03T04:05:06Z: .spec.replicas'),
])
def test_new_conflict_error(conflicts, causes, message) -> None:
    """TestNewConflictError: the 409's message and one FieldManagerConflict cause per field."""
    error = ApplyConflict([fp.Conflict(manager, path) for manager, path in conflicts])
    assert str(error) == message == conflict_message(error.conflicts)
    assert list(error.causes) == causes
    assert print_manager("not json") == '"not json"'


# ----------------------------------------------------------------------------- fields_test.go, pathelement_test.go
@pytest.mark.parametrize("fields", [{"f:metadata": {".": {}, "f:name": {}}}, {}])
def test_fields_round_trip(fields) -> None:
    """TestFieldsRoundTrip."""
    assert fp.fields_v1(fp.set_from_fields_v1(fields)) == fields


def test_fields_to_set_and_set_to_fields_errors() -> None:
    """TestFieldsToSetError (a key that is not JSON), TestSetToFieldsError (an invalid element)."""
    with pytest.raises(ValueError):
        fp.set_from_fields_v1({"k:{invalid json}": {"f:name": {}, ".": {}}})
    with pytest.raises(ValueError, match="invalid PathElement"):
        fp.fields_v1(frozenset({(("", ""), ("f", "ok"))}))


@pytest.mark.parametrize("text", ["i:0", "i:1234", "f:", "f:spec", "f:more-complicated-string", 'k:{"name":"my-container"}', 'k:{"port":"8080","protocol":"TCP"}',
                                  'k:{"optionalField":null}', 'k:{"jsonField":{"A":1,"B":null,"C":"D","E":{"F":"G"}}}', 'k:{"listField":["1","2","3"]}',
                                  "v:null", 'v:"some-string"', "v:1234", 'v:{"some":"json"}'])
def test_path_element_round_trip(text: str) -> None:
    """TestPathElementRoundTrip."""
    assert fp.serialize_element(fp.deserialize_element(text)) == text


def test_path_element_ignore_unknown() -> None:
    """TestPathElementIgnoreUnknown: an unknown qualifier is not an error for a set (dropped)."""
    assert fp.set_from_fields_v1({"r:Hello": {}, "f:a": {}}) == frozenset({P("a")})


@pytest.mark.parametrize("text", ["", "no-colon", "i:index is not a number", "i:1.23", "i:", "v:invalid json", "v:", "k:invalid json", 'k:{"name":invalid}'])
def test_new_path_element_error(text: str) -> None:
    """TestNewPathElementError."""
    with pytest.raises(ValueError):
        fp.deserialize_element(text)


# ----------------------------------------------------------------------------- skipnonapplied_test.go
POD_APPLIED = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod", "labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}


def _skip_never(chain):
    return SkipNonAppliedManager(chain, "v1", "Pod", track_creates=False)  # NewSkipNonAppliedManager: probability 0


def test_no_update_before_first_apply() -> None:
    """TestNoUpdateBeforeFirstApply."""
    f = Harness("v1", "Pod", _skip_never)
    f.apply(POD_APPLIED, "fieldmanager_test_apply")
    assert [entry["manager"] for entry in f.managed_fields()] == ["fieldmanager_test_apply"]


def test_update_before_first_apply() -> None:
    """TestUpdateBeforeFirstApply: an update untracked, then the first apply conflicts with
    before-first-apply on the field it set; forced, two entries."""
    f = Harness("v1", "Pod", _skip_never)
    f.update({"kind": "Pod", "apiVersion": "v1", "metadata": {"labels": {"app": "my-nginx"}}}, "fieldmanager_test_update")
    assert f.managed_fields() == []
    with pytest.raises(ApplyConflict) as conflict:
        f.apply(POD_APPLIED, "fieldmanager_test_apply")
    assert len(conflict.value.causes) == 1
    field, message = conflict.value.causes[0]
    assert field == ".metadata.labels.app" and "before-first-apply" in message
    f.apply(POD_APPLIED, "fieldmanager_test_apply", force=True)
    assert [entry["manager"] for entry in f.managed_fields()] == ["fieldmanager_test_apply", "before-first-apply"]


# ----------------------------------------------------------------------------- managedfieldsupdater_test.go
def _configmap(data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "configmap"}, "data": data}


def _by_manager(f):
    return {entry["manager"]: entry for entry in f.managed_fields()}


@pytest.mark.parametrize(("operation", "second", "changes"), [
    ("update", {"key": "new-value"}, True),   # TestManagedFieldsUpdateDoesModifyTime
    ("apply", {"key": "new-value"}, True),    # TestManagedFieldsApplyDoesModifyTime
    ("update", {"key": "value"}, False),      # TestManagedFieldsUpdateWithoutChangesDoesNotModifyTime
    ("apply", {"key": "value"}, False),       # TestManagedFieldsApplyWithoutChangesDoesNotModifyTime
])
def test_managed_fields_time(operation: str, second, changes: bool) -> None:
    f = Harness("v1", "ConfigMap")
    write = (lambda obj, manager: f.update(obj, manager)) if operation == "update" else (lambda obj, manager: f.apply(obj, manager, force=True))
    write(_configmap({"key": "value"}), "fieldmanager_test")
    before = f.managed_fields()[0]["time"]
    f.clock.sleep()
    write(_configmap(second), "fieldmanager_test")
    assert (f.managed_fields()[0]["time"] != before) is changes


def test_non_managed_fields_update_does_not_modify_time() -> None:
    """TestNonManagedFieldsUpdateDoesNotModifyTime: B's only field taken by A: B is gone."""
    f = Harness("v1", "ConfigMap")
    f.update(_configmap({"key_a": "value"}), "fieldmanager_a_test")
    f.update(_configmap({"key_b": "value"}), "fieldmanager_b_test")
    f.clock.sleep()
    f.update(_configmap({"key_a": "value", "key_b": "new-value"}), "fieldmanager_a_test")
    assert "fieldmanager_b_test" not in _by_manager(f)


def test_non_managed_fields_apply_does_not_modify_time() -> None:
    """TestNonManagedFieldsApplyDoesNotModifyTime."""
    f = Harness("v1", "ConfigMap")
    f.apply(_configmap({"key_a": "value"}), "fieldmanager_a_test", force=True)
    f.apply(_configmap({"key_b": "value"}), "fieldmanager_b_test", force=True)
    before = _by_manager(f)
    f.clock.sleep()
    f.apply(_configmap({"key_a": "new-value"}), "fieldmanager_a_test", force=True)
    assert _by_manager(f)["fieldmanager_b_test"]["time"] == before["fieldmanager_b_test"]["time"]


@pytest.mark.parametrize("operation", ["update", "apply"])
def test_taking_over_managed_fields_does_not_modify_previous_manager_time(operation: str) -> None:
    """TestTakingOverManagedFieldsDuring{Update,Apply}DoesNotModifyPreviousManagerTime (the
    upstream body's ``"key_b": value"`` is YAML for the string ``value"``, kept as is)."""
    f = Harness("v1", "ConfigMap")
    first = yaml.safe_load('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "configmap"}, "data": {"key_a": "value", "key_b": value"}}')
    write = (lambda obj, manager: f.update(obj, manager)) if operation == "update" else (lambda obj, manager: f.apply(obj, manager, force=True))
    write(first, "fieldmanager_a_test")
    before = _by_manager(f)
    f.clock.sleep()
    write(_configmap({"key_b": "new-value"}), "fieldmanager_b_test")
    assert _by_manager(f)["fieldmanager_a_test"]["time"] == before["fieldmanager_a_test"]["time"]


class NoopManager:
    def apply(self, live, applied, managed, manager, force):
        return None, managed

    def update(self, live, new, managed, manager):
        return None, None


def test_nil_new_object_replaced_with_deep_copy_excluding_managed_fields() -> None:
    """TestNilNewObjectReplacedWithDeepCopyExcludingManagedFields."""
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod", "labels": {"app": "nginx"}, "managedFields": [
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}, "manager": "fieldmanager_test", "operation": "Apply", "time": "2021-11-11T18:41:17Z"}]}}
    managed = decode_managed_fields(obj["metadata"]["managedFields"])
    new, _ = ManagedFieldsUpdater(NoopManager(), lambda: "now").apply(obj, copy.deepcopy(obj), managed, "some_manager", False)
    assert new is not obj
    without = copy.deepcopy(obj)
    del without["metadata"]["managedFields"]
    assert new == without


# ----------------------------------------------------------------------------- capmanagers_test.go
def _pod_with_labels(*labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {key: "true" for key in labels}}}


def _expect_idempotence(f: Harness) -> None:
    before = copy.deepcopy(f.managed_fields())
    f.update(f.live, "no-op-update")
    assert f.managed_fields() == before


def _manages(f: Harness, manager: str, path) -> bool:
    entry = next(entry for entry in f.managed_fields() if entry["manager"] == manager)
    return path in fp.set_from_fields_v1(entry["fieldsV1"])


def test_cap_managers_manager_merges_entries() -> None:
    """TestCapManagersManagerMergesEntries."""
    f = Harness("v1", "Pod", lambda chain: CapManagersManager(chain, 3))
    labels = ["one"]
    for index, label in enumerate(["one", "two", "three", "four"], start=1):
        if label not in labels:
            labels.append(label)
        f.clock.sleep()
        f.update(_pod_with_labels(*labels), f"fieldmanager_test_update_{index}")
        _expect_idempotence(f)
    assert [entry["manager"] for entry in f.managed_fields()] == ["ancient-changes", "fieldmanager_test_update_3", "fieldmanager_test_update_4"]
    assert _manages(f, "ancient-changes", P("metadata", "labels", "one"))
    assert _manages(f, "ancient-changes", P("metadata", "labels", "two"))
    assert _manages(f, "fieldmanager_test_update_3", P("metadata", "labels", "three"))
    assert _manages(f, "fieldmanager_test_update_4", P("metadata", "labels", "four"))


def _entry(name, version, order, *fields):
    return {"apiVersion": version, "fieldsType": "FieldsV1", "fieldsV1": fp.fields_v1(frozenset(P(field) for field in fields)), "manager": name, "operation": "Update",
            "time": f"0001-01-01T{order:02d}:00:00Z"}


CAPS = {
    "one version, no ancient changes": (
        [_entry("update-manager1", "v1", 1, "a"), _entry("update-manager2", "v1", 2, "b"), _entry("update-manager3", "v1", 3, "c"), _entry("update-manager4", "v1", 4, "d")],
        [_entry("ancient-changes", "v1", 2, "a", "b"), _entry("update-manager3", "v1", 3, "c"), _entry("update-manager4", "v1", 4, "d")]),
    "one version, one ancient changes": (
        [_entry("ancient-changes", "v1", 2, "a", "b"), _entry("update-manager3", "v1", 3, "c"), _entry("update-manager4", "v1", 4, "d"), _entry("update-manager5", "v1", 5, "e")],
        [_entry("ancient-changes", "v1", 3, "a", "b", "c"), _entry("update-manager4", "v1", 4, "d"), _entry("update-manager5", "v1", 5, "e")]),
    "two versions, no ancient changes": (
        [_entry("update-manager1", "v1", 1, "a"), _entry("update-manager2", "v2", 2, "b"), _entry("update-manager3", "v1", 3, "c"), _entry("update-manager4", "v1", 4, "d"), _entry("update-manager5", "v1", 5, "e")],
        [_entry("update-manager2", "v2", 2, "b"), _entry("ancient-changes", "v1", 4, "a", "c", "d"), _entry("update-manager5", "v1", 5, "e")]),
    "three versions, one ancient changes": (
        [_entry("update-manager2", "v2", 2, "b"), _entry("ancient-changes", "v1", 4, "a", "c", "d"), _entry("update-manager5", "v1", 5, "e"), _entry("update-manager6", "v3", 6, "f"), _entry("update-manager7", "v2", 7, "g")],
        [_entry("ancient-changes", "v1", 5, "a", "c", "d", "e"), _entry("update-manager6", "v3", 6, "f"), _entry("ancient-changes", "v2", 7, "b", "g")]),
    "three versions, two ancient changes": (
        [_entry("ancient-changes", "v1", 5, "a", "c", "d", "e"), _entry("update-manager6", "v3", 6, "f"), _entry("ancient-changes", "v2", 7, "b", "g"), _entry("update-manager8", "v3", 8, "h")],
        [_entry("ancient-changes", "v1", 5, "a", "c", "d", "e"), _entry("ancient-changes", "v2", 7, "b", "g"), _entry("ancient-changes", "v3", 8, "f", "h")]),
    "four versions, two ancient changes": (
        [_entry("ancient-changes", "v1", 5, "a", "c", "d", "e"), _entry("update-manager6", "v3", 6, "f"), _entry("ancient-changes", "v2", 7, "b", "g"), _entry("update-manager8", "v4", 8, "h")],
        [_entry("ancient-changes", "v1", 5, "a", "c", "d", "e"), _entry("update-manager6", "v3", 6, "f"), _entry("ancient-changes", "v2", 7, "b", "g"), _entry("update-manager8", "v4", 8, "h")]),
}


@pytest.mark.parametrize("name", list(CAPS))
def test_cap_update_managers(name: str) -> None:
    """TestCapUpdateManagers (one harness, reset between rows, as upstream)."""
    given, expected = CAPS[name]
    f = Harness("v1", "Pod", lambda chain: CapManagersManager(chain, 3))
    f.reset()
    live = copy.deepcopy(f.live)
    live.setdefault("metadata", {})["managedFields"] = copy.deepcopy(given)
    f.update(live, "no-op-update")
    assert f.managed_fields() == expected
    _expect_idempotence(f)


# ----------------------------------------------------------------------------- fieldmanager_test.go
class FakeManager:
    """capmanagers_test.go's fakeManager: passes updates on, or fails with ``error``."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.error: Exception | None = None

    def update(self, live, new, managed, manager):
        if self.error is not None:
            raise self.error
        return self.inner.update(live, new, managed, manager)

    def apply(self, *args):
        raise NotImplementedError


def test_field_manager_update_no_errors() -> None:
    """TestFieldManagerUpdateNoErrors: on an error the live object's managedFields stay."""
    holder = {}
    f = Harness("v1", "Pod", lambda chain: holder.setdefault("fake", FakeManager(chain)))
    f.update_no_errors(_pod_with_labels("one"), "fieldmanager_test_update_1")
    before = copy.deepcopy(f.managed_fields())
    assert before
    holder["fake"].error = ApplyError("test error")
    f.update_no_errors(_pod_with_labels("one", "two"), "fieldmanager_test_update_1")
    assert f.managed_fields() == before


# ----------------------------------------------------------------------------- lastappliedupdater_test.go
def test_last_applied_updater() -> None:
    """TestLastAppliedUpdater: only "kubectl"'s apply rewrites the annotation."""
    f = Harness("apps/v1", "Deployment", LastAppliedUpdater)
    applied = yaml.safe_load("""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-deployment
  annotations:
    "kubectl.kubernetes.io/last-applied-configuration": "nonempty"
  labels:
    app: my-app
spec:
  replicas: 20
  selector:
    matchLabels:
      app: my-app
  template:
    metadata:
      labels:
        app: my-app
    spec:
      containers:
      - name: my-c
        image: my-image
""")
    f.apply(applied, "NOT-KUBECTL")
    assert f.live["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] == "nonempty"
    f.apply(applied, "kubectl")
    last = f.live["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
    assert last != "nonempty" and "my-app" in last and "my-image" in last


def _large(data_keys: int, annotation_keys: int = 0):
    obj = {"metadata": {"name": "large-update-test-cm", "namespace": "default", "annotations": {LAST_APPLIED_ANNOTATION: "nonempty"}}, "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
    for index in range(data_keys):
        obj["data"][f"this-key-is-very-long-so-as-to-create-a-very-large-serialized-fieldset-{index}"] = "A"
    for index in range(annotation_keys):
        obj["metadata"]["annotations"][f"this-key-is-very-long-so-as-to-create-a-very-large-serialized-fieldset-{index}"] = "A"
    return obj


@pytest.mark.parametrize(("old", "new"), [
    (_large(0), _large(9999)),  # old object + new object last-applied annotation is too big
    (_large(2000), _large(2000, 2000)),  # old object + new object annotations + new object last-applied annotation is too big
], ids=["last-applied-too-big", "annotations-and-last-applied-too-big"])
def test_large_last_applied(old, new) -> None:
    """TestLargeLastApplied: an annotation past the 256 KiB limit is dropped."""
    f = Harness("v1", "ConfigMap", LastAppliedUpdater)
    f.apply(old, "kubectl")
    last = f.live["metadata"]["annotations"].get(LAST_APPLIED_ANNOTATION, "")
    assert last and last != "nonempty"
    f.apply(new, "kubectl")
    assert LAST_APPLIED_ANNOTATION not in f.live["metadata"]["annotations"]


# ----------------------------------------------------------------------------- buildmanagerinfo, stripmeta, versioncheck
def test_build_manager_info_names_an_unnamed_manager_unknown() -> None:
    """buildmanagerinfo.go: an empty manager is "unknown" (no upstream test file; the rule is
    in ``buildManagerInfo``)."""
    seen = []

    class Recorder:
        def update(self, live, new, managed, manager):
            seen.append(manager)
            return new, managed

    BuildManagerInfoManager(Recorder(), "v1", "status").update({}, {}, Managed(), "")
    assert seen == ['{"manager":"unknown","operation":"Update","apiVersion":"v1","subresource":"status"}']


def test_strip_meta_and_version_check() -> None:
    """stripmeta.go: name, namespace, uid, resourceVersion, ... are nobody's; versioncheck.go:
    a configuration of another kind is 400 (no upstream test files)."""
    f = Harness("v1", "ConfigMap")
    f.update({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "d", "uid": "u", "resourceVersion": "3", "labels": {"a": "b"}}}, "writer")
    owned = fp.set_from_fields_v1(f.managed_fields()[0]["fieldsV1"])
    assert owned == frozenset({P("metadata", "labels"), P("metadata", "labels", "a")})
    with pytest.raises(ApplyError, match="invalid object type: /v1, Kind=Secret"):
        f.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}, "applier")
    assert json.loads(manager_identifier("m", "Apply", "v1")) == {"manager": "m", "operation": "Apply"}


# ----------------------------------------------------------------------------- lastappliedmanager_test.go
from pathlib import Path  # noqa: E402

from chaoskube.api.objects import ReplicationController, Service  # noqa: E402

KINDS.update({("v1", "Service"): Service, ("v1", "ReplicationController"): ReplicationController})
LAST_APPLIED = json.loads((Path(__file__).parent / "data" / "lastapplied_cases.json").read_text())


def _derivative(expected, actual) -> bool:
    """``apiequality.Semantic.DeepDerivative(expected, actual)``: what ``expected`` sets,
    ``actual`` has (unset fields of ``expected`` match anything)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(_derivative(value, actual.get(key)) for key, value in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(_derivative(a, b) for a, b in zip(expected, actual))
    if expected is None:
        return True
    return expected == actual


def _last_applied_rows():
    for table in LAST_APPLIED["tables"]:
        for index, row in enumerate(table["rows"]):
            yield pytest.param(table, row, id=f"{table['test']}/{index}")


@pytest.mark.parametrize(("table", "row"), list(_last_applied_rows()))
def test_apply_using_last_applied_annotation(table, row) -> None:
    """``testConflicts``: an object written by client-side apply (an Update by
    "test_client_side_apply" carrying the last-applied annotation), then applied: the
    conflicts left are exactly the expected ones (the annotation's unchanged fields are
    allowed for "kubectl"), force resolves them, and the live object has what was applied."""
    f = Harness(table["apiVersion"], table["kind"])
    original = yaml.safe_load(row["original"]) or {}
    last_applied = row.get("lastApplied", row["original"])
    if last_applied:  # an empty one does not encode (no kind): the annotation is not set
        meta = original.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), LAST_APPLIED_ANNOTATION: json.dumps(yaml.safe_load(last_applied), sort_keys=True, separators=(",", ":"))}
    f.update(original, "test_client_side_apply")
    applied = yaml.safe_load(row["applied"])
    if row.get("expectConflictSet") is None:
        f.apply(applied, row["fieldManager"])
    else:
        with pytest.raises(ApplyConflict) as conflict:
            f.apply(applied, row["fieldManager"])
        expected_paths = fp.iterate(frozenset(tuple(fp.deserialize_element(e) for e in path) for path in row["expectConflictSet"]))
        manager = f'{{"manager":"test_client_side_apply","operation":"Update","apiVersion":"{table["apiVersion"]}"}}'
        expected = ApplyConflict([fp.Conflict(manager, path) for path in expected_paths])
        assert (str(conflict.value), conflict.value.causes) == (str(expected), expected.causes)
        f.apply(applied, row["fieldManager"], force=True)
    assert _derivative(applied, f.live)


# ----------------------------------------------------------------------------- scalehandler_test.go
from chaoskube.api.managedfields import scale_to_parent, scale_to_subresource  # noqa: E402

SCALE = json.loads((Path(__file__).parent / "data" / "scalehandler_cases.json").read_text())
_GO_NAMES = {"Manager": "manager", "Operation": "operation", "APIVersion": "apiVersion", "FieldsType": "fieldsType", "FieldsV1": "fieldsV1", "Time": "time", "Subresource": "subresource"}


def _wire(entries):
    """metav1.ManagedFieldsEntry literals as their JSON form."""
    if entries is None:
        return None
    return [{_GO_NAMES[key]: value for key, value in entry.items()} for entry in entries]


def _mappings(spec) -> dict:
    return {version: (tuple(fp.deserialize_element(e) for e in path) if path is not None else None) for version, path in spec.items()}


def _scale_rows():
    for table in SCALE["tables"]:
        for row in table["rows"]:
            yield pytest.param(table["test"], row, id=f"{table['test']}/{row['desc']}")


@pytest.mark.parametrize(("test", "row"), list(_scale_rows()))
def test_scale_handler(test: str, row) -> None:
    """TestTransformManagedFieldsToSubresource, TestTransformingManagedFieldsToParent(MultiVersion):
    managedFields between a main resource and its ``/scale`` (replicas path by version)."""
    mappings = _mappings(row.get("mappings") or SCALE["defaultMappings"])
    if test == "TestTransformManagedFieldsToSubresource":
        got = scale_to_subresource(_wire(row["input"]), mappings)
    else:
        got = scale_to_parent(_wire(row["parent"]), _wire(row["subresource"]), row.get("groupVersion", "apps/v1"), mappings)
    assert got == _wire(row["expected"])


# ----------------------------------------------------------------------------- versions
# ``k8s.io/apimachinery/pkg/util/managedfields/fieldmanager_test.go`` (kubernetes/kubernetes
# staging/src/k8s.io/apimachinery/pkg/util/managedfields/fieldmanager_test.go):
# TestVersionCheck, TestVersionCheckDoesNotPanic, TestApplyStripsFields, on the
# ``managedfieldstest.NewTestFieldManager`` harness (the default chain at apps/v1
# Deployment); ``internal/versionconverter_test.go``: TestVersionConverter,
# TestVersionConverterSameVersion (a CRD's strategy-None converter here, as the fake object
# convertor there only changes apiVersion); and kubernetes
# ``test/integration/apiserver/apply/apply_test.go`` TestApplyConvertsManagedFieldsVersion
# on the same harness. Each row: (test, the steps, what upstream expects).
VERSION_ROWS = [
    # TestVersionCheck: the configuration at the manager's version applies; at another, 400
    ("TestVersionCheck", [("apply", {"apiVersion": "apps/v1", "kind": "Deployment"}, "fieldmanager_test", None),
                          ("apply", {"apiVersion": "apps/v1beta1", "kind": "Deployment"}, "fieldmanager_test", 400)]),
    # TestVersionCheckDoesNotPanic: a configuration without apiVersion or kind: 400
    ("TestVersionCheckDoesNotPanic", [("apply", {"apiVersion": "apps/v1", "kind": "Deployment"}, "fieldmanager_test", None),
                                      ("apply", {}, "fieldmanager_test", 400)]),
]
#: Rows this model cannot run, with the reason (none).
VERSION_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize("test, steps", VERSION_ROWS, ids=[row[0] for row in VERSION_ROWS])
def test_version_check(test, steps) -> None:
    if test in VERSION_XFAIL:
        pytest.xfail(VERSION_XFAIL[test])
    f = Harness("apps/v1", "Deployment")
    for operation, obj, manager, code in steps:
        if code is None:
            f.apply(obj, manager)
        else:
            with pytest.raises(ApplyError) as raised:
                f.apply(obj, manager)
            assert raised.value.code == code


def test_apply_strips_fields() -> None:
    """TestApplyStripsFields: an update whose only fields are metadata nobody owns (and an
    entry without fieldsType, which does not decode) leaves no managedFields."""
    f = Harness("apps/v1", "Deployment")
    f.update({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "b", "namespace": "b", "uid": "b", "generation": 0, "resourceVersion": "b", "creationTimestamp": "2021-01-01T00:00:00Z",
        "managedFields": [{"manager": "update", "operation": "Apply", "apiVersion": "apps/v1"}]}}, "fieldmanager_test")
    assert f.managed_fields() == []


def test_version_converter() -> None:
    """TestVersionConverter: an apps/v1beta1 object converted to apps/v1 is the apps/v1 one."""
    from chaoskube.api.managedfields import NoneConversion

    convert = NoneConversion(frozenset({"apps/v1beta1", "apps/v1"}))
    assert convert({"apiVersion": "apps/v1beta1", "kind": "Deployment"}, "apps/v1beta1", "apps/v1") == {"apiVersion": "apps/v1", "kind": "Deployment"}


def test_version_converter_same_version() -> None:
    """TestVersionConverterSameVersion: a conversion to the version the object is at returns
    the input itself and calls no converter (the updater's and the field manager's)."""
    calls = []

    def counting(value, from_version, to_version):
        calls.append((from_version, to_version))
        return value

    schema, root = builtin_schema(Deployment)
    updater = fp.Updater(schema, lambda version: root, counting)
    value = {"apiVersion": "apps/v1beta1", "kind": "Deployment"}
    assert updater.convert(value, "apps/v1beta1", "apps/v1beta1") is value
    field_manager = FieldManager(schema, root, "apps/v1beta1", "Deployment", convert=counting, hub_version="apps/v1beta1")
    assert field_manager._to_version(value, "apps/v1beta1") is value
    assert calls == []


def test_apply_converts_managed_fields_version() -> None:
    """TestApplyConvertsManagedFieldsVersion (test/integration/apiserver/apply/apply_test.go):
    an object created with an Apply entry of "sidecar_controller" at extensions/v1beta1, then
    applied by "sidecar_controller" at apps/v1: two entries, the applier's one at apps/v1
    owning exactly what it applied (its identifier has no version, so it is replaced)."""
    f = Harness("apps/v1", "Deployment")
    f.update({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "deployment", "labels": {"app": "nginx"},
        "managedFields": [{"manager": "sidecar_controller", "operation": "Apply", "apiVersion": "extensions/v1beta1", "fieldsType": "FieldsV1", "fieldsV1": {
            "f:metadata": {"f:labels": {"f:sidecar_version": {}}},
            "f:spec": {"f:template": {"f: spec": {"f:containers": {'k:{"name":"sidecar"}': {".": {}, "f:image": {}}}}}}}}]},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}}, "template": {"metadata": {"labels": {"app": "nginx"}},
                                                                           "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}}, "creator")
    f.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "deployment", "labels": {"sidecar_version": "release"}},
             "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "sidecar:latest"}]}}}}, "sidecar_controller")
    managed = f.managed_fields()
    assert len(managed) == 2
    (actual,) = [entry for entry in managed if entry["manager"] == "sidecar_controller" and entry["apiVersion"] == "apps/v1"]
    assert actual["operation"] == "Apply" and actual["fieldsType"] == "FieldsV1"
    assert actual["fieldsV1"] == {"f:metadata": {"f:labels": {"f:sidecar_version": {}}},
                                  "f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}

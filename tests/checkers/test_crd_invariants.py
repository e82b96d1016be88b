"""crd-invariants (chaoskube/checkers/customresources.py) on small hand-made store histories:
true on a history that keeps every rule, false when one rule breaks, unknown when nothing
was written; and its schema model against the cases of the CRD docs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from chaoskube.checkers.customresources import check_crd_invariants, schema_problems

GROUP = "stable.example.com"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "required": ["schedule"], "properties": {
            "schedule": {"type": "string", "pattern": r"^(\S+\s+){4}\S+$"},
            "retentionDays": {"type": "integer", "default": 7, "minimum": 1, "maximum": 90},
            "storage": {"type": "object", "default": {}, "properties": {"class": {"type": "string", "default": "standard", "enum": ["standard", "cold"]}}},
            "targets": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {"name": {"type": "string"}, "weight": {"type": "integer", "default": 1}}}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "port": {"x-kubernetes-int-or-string": True},
        }},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def crd(*, storage: str = "v1", schema: dict[str, Any] | None = None, status: bool = True, deleting: bool = False, stored: tuple[str, ...] | None = None) -> dict[str, Any]:
    version = {"name": storage, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema or SCHEMA}}
    if status:
        version["subresources"] = {"status": {}}
    meta: dict[str, Any] = {"name": f"backups.{GROUP}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta,
            "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "backups", "kind": "Backup"}, "versions": [version]},
            "status": {"storedVersions": list(stored if stored is not None else ("v1", storage) if storage != "v1" else ("v1",))}}


def backup(spec: dict[str, Any] | None = None, *, version: str = "v1", status: dict[str, Any] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"apiVersion": f"{GROUP}/{version}", "kind": "Backup", "metadata": {"name": "b", "namespace": "default"},
                                "spec": spec if spec is not None else {"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "standard"}}}
    if status is not None:
        document["status"] = status
    return document


class History:
    """raft-apply events, one store write each."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def put(self, t: float, key: str, document: dict[str, Any]) -> History:
        return self._write(t, ["PUT", key, json.dumps(document)])

    def delete(self, t: float, key: str) -> History:
        return self._write(t, ["DELETE", key, None])

    def _write(self, t: float, entry: list[Any]) -> History:
        self.events.append({"type": "raft-apply", "t": t, "revision": len(self.events) + 1, "events": [entry]})
        return self


CRD_KEY = f"/registry/customresourcedefinitions/backups.{GROUP}"
KEY = f"/registry/backups.{GROUP}/default/b"


def test_unknown_when_no_custom_object_was_written():
    verdict = check_crd_invariants(History().put(1, CRD_KEY, crd()).events)
    assert verdict.valid is None and verdict.details["nothing_to_judge"]


def test_true_when_every_write_keeps_the_rules():
    history = History().put(1, CRD_KEY, crd()).put(2, KEY, backup()).put(3, KEY, backup(status={"phase": "Scheduled"}))
    history.delete(4, KEY).delete(5, CRD_KEY)
    verdict = check_crd_invariants(history.events)
    assert verdict.valid is True, verdict.reason
    assert verdict.details["writes_checked"] == 2


@pytest.mark.parametrize(("spec", "rule", "words"), [
    ({"schedule": "0 2 * * *", "storage": {"class": "standard"}}, "undefaulted", "spec.retentionDays is missing its default 7"),
    ({"schedule": "0 2 * * *", "retentionDays": 7}, "undefaulted", "spec.storage is missing its default"),
    ({"schedule": "0 2 * * *", "retentionDays": 7, "storage": {}}, "undefaulted", "spec.storage.class is missing its default"),
    ({"schedule": "0 2 * * *", "retentionDays": None, "storage": {"class": "standard"}}, "undefaulted", "spec.retentionDays is missing"),
    ({"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "standard"}, "targets": [{"name": "a"}]}, "undefaulted", "spec.targets[0].weight"),
    ({"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "standard"}, "legacyMode": True}, "unpruned", "spec.legacyMode is not in the schema"),
    ({"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "standard", "tier": 1}}, "unpruned", "spec.storage.tier"),
    ({"schedule": "0 2 * * *", "retentionDays": 91, "storage": {"class": "standard"}}, "invalid", "above its maximum 90"),
    ({"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "hot"}}, "invalid", "is not one of"),
    ({"schedule": "daily", "retentionDays": 7, "storage": {"class": "standard"}}, "invalid", "does not match"),
    ({"retentionDays": 7, "storage": {"class": "standard"}}, "invalid", "spec.schedule is required"),
    ({"schedule": "0 2 * * *", "retentionDays": "7", "storage": {"class": "standard"}}, "invalid", "not of type integer"),
    ({"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "standard"}, "port": 1.5}, "invalid", "neither an integer nor a string"),
    ({"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "standard"}, "targets": [{"name": "a", "weight": 1}] * 3}, "invalid", "more than 2 items"),
])
def test_false_when_a_stored_object_is_not_pruned_defaulted_or_valid(spec, rule, words):
    verdict = check_crd_invariants(History().put(1, CRD_KEY, crd()).put(2, KEY, backup(spec)).events)
    assert verdict.valid is False
    assert verdict.details["rule"] == rule
    assert words in verdict.reason, verdict.reason


def test_preserved_subtrees_and_int_or_string_are_not_findings():
    spec = {"schedule": "0 2 * * *", "retentionDays": 7, "storage": {"class": "standard"}, "extra": {"anything": {"goes": 1}}, "port": "http"}
    assert check_crd_invariants(History().put(1, CRD_KEY, crd()).put(2, KEY, backup(spec)).events).valid is True


def test_false_when_stored_at_another_version_than_the_storage_version():
    verdict = check_crd_invariants(History().put(1, CRD_KEY, crd()).put(2, KEY, backup(version="v2")).events)
    assert verdict.valid is False and verdict.details["rule"] == "storage-version"


def test_false_when_the_storage_version_is_not_recorded_in_stored_versions():
    verdict = check_crd_invariants(History().put(1, CRD_KEY, crd(stored=())).put(2, KEY, backup()).events)
    assert verdict.valid is False and "status.storedVersions" in verdict.reason


def test_status_subresource_rules():
    created_with_status = History().put(1, CRD_KEY, crd()).put(2, KEY, backup(status={"phase": "Scheduled"}))
    assert check_crd_invariants(created_with_status.events).details["rule"] == "status-subresource"
    both = History().put(1, CRD_KEY, crd()).put(2, KEY, backup())
    changed = backup({"schedule": "0 3 * * *", "retentionDays": 7, "storage": {"class": "standard"}}, status={"phase": "Scheduled"})
    verdict = check_crd_invariants(both.put(3, KEY, changed).events)
    assert verdict.valid is False and "changed status and spec" in verdict.reason
    # without the subresource, status is an ordinary field
    plain = History().put(1, CRD_KEY, crd(status=False)).put(2, KEY, backup(status={"phase": "x"})).put(3, KEY, changed)
    assert check_crd_invariants(plain.events).valid is True


def test_objects_of_a_deleted_crd():
    left = History().put(1, CRD_KEY, crd()).put(2, KEY, backup()).delete(3, CRD_KEY)
    verdict = check_crd_invariants(left.events)
    assert verdict.valid is False and verdict.details["rule"] == "crd-deleted-with-objects"
    # a write after the CRD left the store: within the API servers' cache lag it is excused
    late = History().put(1, CRD_KEY, crd()).put(2, KEY, backup()).delete(3, KEY).delete(4, CRD_KEY)
    assert check_crd_invariants(copy.deepcopy(late).put(9, KEY, backup()).events).valid is True
    verdict = check_crd_invariants(late.put(20, KEY, backup()).events)
    assert verdict.valid is False and verdict.details["rule"] == "written-after-crd-deleted"
    # created while the CRD was marked for deletion (NamespaceLifecycle's twin: the CRD handler refuses)
    terminating = History().put(1, CRD_KEY, crd()).put(2, CRD_KEY, crd(deleting=True)).put(30, KEY, backup())
    assert check_crd_invariants(terminating.events).details["rule"] == "written-after-crd-deleted"


def test_a_crd_changed_while_objects_are_written_is_judged_by_the_schema_in_force():
    strict = copy.deepcopy(SCHEMA)
    strict["properties"]["spec"]["properties"]["retentionDays"]["maximum"] = 5
    # retentionDays 7 was valid under the old schema; written 2 s after the change, an API
    # server may still hold the old schema: not a finding
    history = History().put(1, CRD_KEY, crd()).put(20, CRD_KEY, crd(schema=strict)).put(22, KEY, backup())
    verdict = check_crd_invariants(history.events)
    assert verdict.valid is True and verdict.details["writes_with_changed_crd"] == 1
    # written long after the change: judged by the new schema alone
    later = History().put(1, CRD_KEY, crd()).put(20, CRD_KEY, crd(schema=strict)).put(40, KEY, backup())
    assert check_crd_invariants(later.events).details["rule"] == "invalid"
    # a storage version changed: each object at the storage version of its write
    moved = History().put(1, CRD_KEY, crd()).put(2, KEY, backup()).put(20, CRD_KEY, crd(storage="v2"))
    assert check_crd_invariants(copy.deepcopy(moved).put(40, KEY, backup(version="v2")).events).valid is True
    assert check_crd_invariants(moved.put(40, KEY, backup(version="v1")).events).details["rule"] == "storage-version"


def test_features_it_does_not_judge_are_listed():
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["properties"]["schedule"]["x-kubernetes-validations"] = [{"rule": "self != ''"}]
    schema["properties"]["spec"]["properties"]["schedule"]["format"] = "cron"
    verdict = check_crd_invariants(History().put(1, CRD_KEY, crd(schema=schema)).put(2, KEY, backup()).events)
    assert verdict.valid is True
    assert verdict.details["features_not_judged"] == ["format", "x-kubernetes-validations"]


def test_schema_model_root_metadata_and_embedded_resources():
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {"type": "object"}}},
    }}}}
    document = {"apiVersion": "a/v1", "kind": "A", "metadata": {"name": "x", "anything": 1},
                "spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}}
    assert schema_problems(document, schema) == []
    document["spec"]["template"]["spec"]["containers"] = []
    assert [rule for rule, _ in schema_problems(document, schema)] == ["unpruned"]


def versioned_crd(served: dict[str, bool]) -> dict[str, Any]:
    """The CRD of :func:`crd` with more versions: name -> served (v1 stays the storage version)."""
    document = crd()
    template = document["spec"]["versions"][0]
    document["spec"]["versions"] = [{**copy.deepcopy(template), "name": name, "served": flag, "storage": name == "v1"} for name, flag in served.items()]
    return document


def request(t: float, version: str, code: int, verb: str = "create", name: str = "b") -> dict[str, Any]:
    return {"type": "api-request", "t": t, "server": "kube-apiserver-1", "id": f"r{t}", "verb": verb, "resource": f"backups.{GROUP}",
            "subresource": "", "namespace": "default", "name": name, "code": code, "version": version}


def test_a_request_at_a_version_the_crd_does_not_serve_is_answered_404():
    """Rule 7: upstream's crdHandler hands a request at a version that is not served (listed
    with served: false, or not listed) to the delegate: 404 NotFound."""
    served = {"v1beta1": False, "v1": True}
    ok = History().put(1, CRD_KEY, versioned_crd(served)).events + [request(100, "v1", 201), request(101, "v1beta1", 404), request(102, "v2", 404),
                                                                     request(103, "v1beta1", 403), request(104, "v1beta1", 504)]
    verdict = check_crd_invariants(ok)
    assert verdict.valid is True, verdict.reason
    assert verdict.details["requests_checked"] == 5
    for version, code in (("v1beta1", 201), ("v1beta1", 200), ("v2", 201), ("v1beta1", 422), ("v1beta1", 409)):
        verdict = check_crd_invariants(History().put(1, CRD_KEY, versioned_crd(served)).events + [request(100, version, code)])
        assert verdict.valid is False, (version, code)
        assert verdict.details["rule"] == "unserved-version"
        assert f"at version {version}, which its CRD does not serve" in verdict.reason and "v1beta1 (served: false)" in verdict.reason
        assert verdict.evidence[0]["request"]["code"] == code


def test_a_version_unserved_by_a_crd_update_is_judged_once_no_api_server_can_hold_the_old_crd():
    """Bounds: the CRD cache lags lag_s, and the server checked the version when the request
    began, up to request_s before its journaled answer: a request answered within that of
    the update is judged by either revision; after it, by the new one only."""
    before, after = versioned_crd({"v1beta1": True, "v1": True}), versioned_crd({"v1beta1": False, "v1": True})
    history = History().put(1, CRD_KEY, before).put(100, CRD_KEY, after).events
    assert check_crd_invariants([*history, request(100 + LAG + 59, "v1beta1", 201)]).valid is True  # an old cache, a long request
    late = check_crd_invariants([*history, request(100 + LAG + 61, "v1beta1", 201)])
    assert late.valid is False and late.details["rule"] == "unserved-version"
    # the storage version itself unserved: the same rule
    storage_retired = versioned_crd({"v1": False, "v2": True})
    verdict = check_crd_invariants(History().put(1, CRD_KEY, storage_retired).events + [request(100, "v1", 200, verb="patch")])
    assert verdict.valid is False and "v1 (served: false)" in verdict.reason


def test_requests_without_a_version_or_a_crd_are_not_judged():
    events = History().put(1, CRD_KEY, versioned_crd({"v1beta1": False, "v1": True})).events
    unnamed = {**request(100, "", 201)}
    del unnamed["version"]
    other = {**request(100, "v1", 201), "resource": "widgets.other.example.com"}
    verdict = check_crd_invariants([*events, unnamed, other])
    assert verdict.valid is None  # nothing written, nothing judged
    assert verdict.details["requests_unjudged"] == 1 and verdict.details["requests_checked"] == 0


LAG = 10.0


def test_reads_through_the_https_front_are_judged_by_their_path():
    """Rule 7 for reads: the front journals each HTTP request (``http-request``: method,
    path, code); a GET answered 200 at a version the CRD does not serve is a finding."""
    events = History().put(1, CRD_KEY, versioned_crd({"v1beta1": False, "v1": True})).events

    def read(t: float, path: str, code: int) -> dict[str, Any]:
        return {"type": "http-request", "t": t, "client": "kubectl", "server": "kube-apiserver-1", "method": "GET", "path": path, "code": code, "outcome": "answered"}

    fine = [read(100, f"/apis/{GROUP}/v1/namespaces/default/backups/b", 200), read(101, f"/apis/{GROUP}/v1beta1/namespaces/default/backups/b", 404),
            read(102, f"/apis/{GROUP}/v1/watch/namespaces/default/backups", 200), read(103, "/api/v1/namespaces/default/pods", 200),
            read(104, f"/apis/{GROUP}", 200)]
    verdict = check_crd_invariants([*events, *fine])
    assert verdict.valid is True and verdict.details["requests_checked"] == 3, verdict.reason
    for path in (f"/apis/{GROUP}/v1beta1/namespaces/default/backups/b", f"/apis/{GROUP}/v1beta1/backups", f"/apis/{GROUP}/v1beta1/watch/namespaces/default/backups"):
        verdict = check_crd_invariants([*events, read(100, path, 200)])
        assert verdict.valid is False and verdict.details["rule"] == "unserved-version", path
        assert "answered 200 to a read of" in verdict.reason

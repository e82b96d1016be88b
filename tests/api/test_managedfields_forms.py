"""The field manager's fast paths give the same answers as the long ones: ``json_form``
(msgspec's encoding) has the typed form of ``to_dict``, and ``compare``'s shortcut for an
unchanged subtree (orjson's bytes) still tells ``true`` from ``1`` and ``0.0`` from ``0``.
(A create's all-added walk, ``fieldpath._added``, is covered by the upstream field manager
tests, whose objects start from nothing.)"""

from __future__ import annotations

import msgspec
import orjson

from chaoskube.api import fieldpath as fp
from chaoskube.api.managedfields import builtin_schema, json_form, typed_form
from chaoskube.api.manifests import from_dict, to_dict
from chaoskube.apiserver.bootstrap import bootstrap_objects

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {"app": "a"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]},
    "spec": {"nodeName": "n1", "hostNetwork": True, "containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "resources": {"requests": {"cpu": "10m"}}}], "tolerations": [{"key": "k", "operator": "Exists"}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}], "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "nginx:1.27", "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]},
}
DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
}


def _objects() -> list:
    return [*bootstrap_objects(), from_dict(POD), from_dict(DEPLOYMENT), from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4"}}})]


def _canonical(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def test_json_form_has_the_typed_form_of_to_dict() -> None:
    for obj in _objects():
        cls = type(obj)
        assert _canonical(typed_form(json_form(obj), cls)) == _canonical(typed_form(to_dict(obj), cls)), cls.__name__


def test_unchanged_subtrees_are_equal_only_as_the_same_json() -> None:
    schema, root = builtin_schema(type(from_dict(POD)))
    old = typed_form(to_dict(from_dict(POD)), type(from_dict(POD)))
    new = msgspec.json.decode(msgspec.json.encode(old))
    new["spec"]["hostNetwork"] = 1  # == True, but not the same JSON: the subtree is walked
    assert fp.compare(old, new, schema, root).modified == {(("f", "spec"), ("f", "hostNetwork"))}
    assert fp.compare(old, msgspec.json.decode(msgspec.json.encode(old)), schema, root).empty()

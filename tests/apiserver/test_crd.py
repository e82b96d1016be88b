"""CustomResourceDefinitions: structural schemas, pruning, defaulting, validation.

The pruning and defaulting tables are upstream's, transcribed row for row (the structural
schemas written in their OpenAPI form):

- ``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm_test.go`` ``TestPrune``;
- ``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm_test.go`` ``TestDefault``.
"""

import json

import pytest

from chaoskube.api import from_dict
from chaoskube.apiserver.crd import default, prune, structural_problems, validate_crd, validate_object, validate_value

OBJ = {"type": "object"}
PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}
EMBEDDED = {"x-kubernetes-embedded-resource": True}

NESTED_PRESERVE_IN = """
{
  "unspecified":"bar",
  "alpha": "abc",
  "beta": 42.0,
  "unspecifiedObject": {"unspecified": "bar"},
  "pruning": {
     "unspecified": "bar",
     "unspecifiedObject": {"unspecified": "bar"},
     "pruning": {"unspecified": "bar"},
     "apiVersion": "unknown",
     "preserving": {"unspecified": "bar"}
  },
  "preserving": {
     "unspecified": "bar",
     "unspecifiedObject": {"unspecified": "bar"},
     "pruning": {"unspecified": "bar"},
     "preserving": {"unspecified": "bar"}
  },
  "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
     "foo": {
        "specified": {"unspecified":"bar"},
        "unspecified": "bar"
     }
  },
  "preservingAdditionalPropertiesKeyPruneValues": {
     "foo": {
        "specified": {"unspecified":"bar"},
        "unspecified": "bar"
     }
  }
}"""
NESTED_PRESERVE_SCHEMA = {
    **OBJ, **PRESERVE,
    "properties": {
        "alpha": {"type": "string"},
        "beta": {"type": "number"},
        "pruning": {**OBJ, "properties": {"preserving": {**OBJ, **PRESERVE}, "pruning": OBJ}},
        "preserving": {**OBJ, **PRESERVE, "properties": {"preserving": {**OBJ, **PRESERVE}, "pruning": OBJ}},
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
            **PRESERVE, "type": "object", "additionalProperties": {**OBJ, "properties": {"specified": OBJ}},
        },
        "preservingAdditionalPropertiesKeyPruneValues": {"type": "object", "additionalProperties": {**OBJ, "properties": {"specified": OBJ}}},
    },
}
NESTED_PRESERVE_OUT = """
{
  "unspecified":"bar",
  "alpha": "abc",
  "beta": 42.0,
  "unspecifiedObject": {"unspecified": "bar"},
  "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
  "preserving": {
     "unspecified": "bar",
     "unspecifiedObject": {"unspecified": "bar"},
     "pruning": {},
     "preserving": {"unspecified": "bar"}
  },
  "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
  "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}
}"""
NESTED_PRESERVE_PRUNED = [
    "preserving.pruning.unspecified",
    "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
    "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
    "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
    "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
    "pruning.apiVersion",
    "pruning.pruning.unspecified",
    "pruning.unspecified",
    "pruning.unspecifiedObject",
]

EMBEDDED_IN = """
{
  "apiVersion": "foo/v1", "kind": "Foo",
  "metadata": {"name": "instance", "unspecified": "bar"},
  "unspecified":"bar",
  "pruned": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar", "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {"unspecified": "bar"}},
  "preserving": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar", "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {"unspecified": "bar"}},
  "nested": {
    "apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar", "metadata": {"name": "instance", "unspecified": "bar"},
    "spec": {
      "unspecified": "bar",
      "embedded": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar", "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {"unspecified": "bar"}}
    }
  }
}"""
EMBEDDED_SCHEMA = {
    **OBJ,
    "properties": {
        "pruned": {**OBJ, **EMBEDDED, "properties": {"spec": OBJ}},
        "preserving": {**OBJ, **EMBEDDED, **PRESERVE},
        "nested": {**OBJ, **EMBEDDED, "properties": {"spec": {**OBJ, "properties": {"embedded": {**OBJ, **EMBEDDED, "properties": {"spec": OBJ}}}}}},
    },
}
EMBEDDED_OUT_BODY = {
    "pruned": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {}},
    "preserving": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar", "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {"unspecified": "bar"}},
    "nested": {
        "apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"},
        "spec": {"embedded": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {}}},
    },
}
EMBEDDED_PRUNED = ["nested.spec.embedded.spec.unspecified", "nested.spec.embedded.unspecified", "nested.spec.unspecified", "nested.unspecified", "pruned.spec.unspecified", "pruned.unspecified", "unspecified"]

# (name, json, isResourceRoot, schema, expected object, expected pruned) -- TestPrune, every row.
PRUNE_CASES = [
    ("empty", "null", False, None, "null", []),
    ("scalar", "4", False, {}, "4", []),
    ("scalar array", "[1,2]", False, {"items": {}}, "[1,2]", []),
    ("object array", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]', False, {"items": {"properties": {"a": {}, "c": {}}}}, '[{"a":1},{},{"a":1,"c":3}]', ["[1].b", "[2].b"]),
    ("object array with nil schema", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]', False, None, "[{},{},{}]", ["[0].a", "[1].b", "[2].a", "[2].b", "[2].c"]),
    (
        "object array object",
        '{"array":[{"a":1},{"b":1},{"a":1,"b":2,"c":3}],"unspecified":{"a":1},"specified":{"a":1,"b":2,"c":3}}',
        False,
        {"properties": {"array": {"items": {"properties": {"a": {}, "c": {}}}}, "specified": {"properties": {"a": {}, "c": {}}}}},
        '{"array":[{"a":1},{},{"a":1,"c":3}],"specified":{"a":1,"c":3}}',
        ["array[1].b", "array[2].b", "specified.b", "unspecified"],
    ),
    ("nested x-kubernetes-preserve-unknown-fields", NESTED_PRESERVE_IN, False, NESTED_PRESERVE_SCHEMA, NESTED_PRESERVE_OUT, NESTED_PRESERVE_PRUNED),
    (
        "additionalProperties with schema",
        '{"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1}}}',
        False,
        {"properties": {"a": {}, "c": {"additionalProperties": {"type": "integer"}}}},
        '{"a":1,"c":{"a":1,"b":2,"c":{}}}',
        ["b", "c.c.a"],
    ),
    (
        "additionalProperties with bool",
        '{"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1, "apiVersion": "unknown"}}}',
        False,
        {"properties": {"a": {}, "c": {"additionalProperties": False}}},
        '{"a":1,"c":{"a":1,"b":2,"c":{}}}',
        ["b", "c.c.a", "c.c.apiVersion"],
    ),
    ("x-kubernetes-embedded-resource", EMBEDDED_IN, False, EMBEDDED_SCHEMA, json.dumps(EMBEDDED_OUT_BODY), EMBEDDED_PRUNED),
    (
        "x-kubernetes-embedded-resource, with root=true",
        EMBEDDED_IN,
        True,
        EMBEDDED_SCHEMA,
        json.dumps({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"}, **EMBEDDED_OUT_BODY}),
        EMBEDDED_PRUNED,
    ),
]


@pytest.mark.parametrize(("name", "text", "root", "schema", "expected", "expected_pruned"), PRUNE_CASES, ids=[case[0] for case in PRUNE_CASES])
def test_prune_as_upstream(name, text, root, schema, expected, expected_pruned):
    value = json.loads(text)
    pruned = prune(value, schema, root=root)
    assert value == json.loads(expected)
    assert pruned == expected_pruned


def _d(value):
    return {"default": value}


# (name, json, schema, expected) -- TestDefault, every row.
DEFAULT_CASES = [
    ("empty", "null", None, "null"),
    ("scalar", "4", _d("foo"), "4"),
    ("scalar array", "[1,2]", {"items": _d("foo")}, "[1,2]"),
    ("object array", '[{"a":1},{"b":1},{"c":1}]', {"items": {"properties": {"a": _d("A"), "b": _d("B"), "c": _d("C")}}}, '[{"a":1,"b":"B","c":"C"},{"a":"A","b":1,"c":"C"},{"a":"A","b":"B","c":1}]'),
    (
        "object array object",
        '{"array":[{"a":1},{"b":2}],"object":{"a":1},"additionalProperties":{"x":{"a":1},"y":{"b":2}}}',
        {"properties": {
            "array": {"items": {"properties": {"a": _d("A"), "b": _d("B")}}},
            "object": {"properties": {"a": _d("N"), "b": _d("O")}},
            "additionalProperties": {"additionalProperties": {"properties": {"a": _d("alpha"), "b": _d("beta")}}},
            "foo": _d("bar"),
        }},
        '{"array":[{"a":1,"b":"B"},{"a":"A","b":2}],"object":{"a":1,"b":"O"},"additionalProperties":{"x":{"a":1,"b":"beta"},"y":{"a":"alpha","b":2}},"foo":"bar"}',
    ),
    ("empty and null", '[{},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":null},{"a":[]},{"a":{}}]', {"items": {"properties": {"a": _d("A")}}}, '[{"a":"A"},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":"A"},{"a":[]},{"a":{}}]'),
    ("null in nullable list", "[null]", {"nullable": True, "items": {"properties": {"a": _d("A")}}}, "[null]"),
    ("null in non-nullable list", "[null]", {"nullable": False, "items": _d("A")}, '["A"]'),
    ("null in nullable object", '{"a": null}', {"properties": {"a": {"nullable": True, "default": "A"}}}, '{"a": null}'),
    ("null in non-nullable object", '{"a": null}', {"properties": {"a": {"nullable": False, "default": "A"}}}, '{"a": "A"}'),
    ("null in nullable object with additionalProperties", '{"a": null}', {"additionalProperties": {"nullable": True, "default": "A"}}, '{"a": null}'),
    ("null in non-nullable object with additionalProperties", '{"a": null}', {"additionalProperties": {"nullable": False, "default": "A"}}, '{"a": "A"}'),
    ("null unknown field", '{"a": null}', {"additionalProperties": True}, '{"a": null}'),
]


@pytest.mark.parametrize(("name", "text", "schema", "expected"), DEFAULT_CASES, ids=[case[0] for case in DEFAULT_CASES])
def test_default_as_upstream(name, text, schema, expected):
    value = json.loads(text)
    default(value, schema)
    assert value == json.loads(expected)


def test_defaults_are_deep_copies():
    schema = {"properties": {"a": {"default": {"x": [1]}}}}
    first, second = {}, {}
    default(first, schema)
    default(second, schema)
    first["a"]["x"].append(2)
    assert second == {"a": {"x": [1]}}


# --------------------------------------------------------------------------- validation messages (as kubectl prints them)

CRONTAB_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
                "image": {"type": "string", "minLength": 1, "maxLength": 20},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "ports": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "integer"}},
                "size": {"x-kubernetes-int-or-string": True},
            },
        },
    },
}

VALIDATION_CASES = [
    # the Kubernetes docs' CronTab example ("Validation", custom-resource-definitions page)
    ({"spec": {"cronSpec": "* * * *", "image": "x", "replicas": 15}}, [
        r"spec.cronSpec: Invalid value: \"* * * *\": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'".replace("\\\"", '"'),
        "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
    ]),
    ({"spec": {"image": "x", "replicas": 0}}, ["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"]),
    ({"spec": {"image": "x", "replicas": "three"}}, ['spec.replicas: Invalid value: "three": spec.replicas in body must be of type integer: "three"']),
    ({"spec": {}}, ["spec.image: Required value"]),
    ({"spec": {"image": ""}}, ['spec.image: Invalid value: "": spec.image in body should be at least 1 chars long']),
    ({"spec": {"image": "x", "color": "purple"}}, ['spec.color: Unsupported value: "purple": supported values: "red", "blue"']),
    ({"spec": {"image": "x", "ports": [1, 2, 3]}}, ["spec.ports: Too many: 3: must have at most 2 items"]),
    ({"spec": {"image": "x", "ports": []}}, ['spec.ports: Invalid value: "array": spec.ports in body should have at least 1 items']),
    ({"spec": {"image": "x", "ports": [1, "b"]}}, ['spec.ports[1]: Invalid value: "b": spec.ports[1] in body must be of type integer: "b"']),
    ({"spec": {"image": "x", "size": "10Gi"}}, []),
    ({"spec": {"image": "x", "size": 3}}, []),
    ({"spec": {"image": "x", "size": True}}, ["spec.size: Invalid value: true: spec.size in body must be of type integer,string: true"]),
    ({"spec": {"image": "x", "replicas": 5.0}}, []),  # JSON has one number type: 5.0 is an integer
]


@pytest.mark.parametrize(("obj", "expected"), VALIDATION_CASES)
def test_validation_messages(obj, expected):
    assert validate_object({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"}, **obj}, CRONTAB_SCHEMA) == expected


def test_nullable():
    assert validate_value(None, {"type": "string"}, "spec.a") == ['spec.a: Invalid value: "null": spec.a in body must be of type string: "null"']
    assert validate_value(None, {"type": "string", "nullable": True}, "spec.a") == []


# --------------------------------------------------------------------------- structural schemas and the CRD


def test_structural_schemas():
    assert structural_problems(CRONTAB_SCHEMA) == []
    assert structural_problems({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}) == [
        "openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
    ]
    assert structural_problems({"properties": {}}) == ["openAPIV3Schema.type: Required value: must not be empty at the root"]
    assert structural_problems({"type": "object", "properties": {"l": {"type": "array"}}}) == ["openAPIV3Schema.properties[l].items: Required value: must be specified"]
    assert structural_problems({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}) == [
        "openAPIV3Schema.properties[l].items.type: Required value: must not be empty for specified array items"
    ]
    assert structural_problems({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}) == [
        "openAPIV3Schema.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
    ]
    assert structural_problems({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}) == [
        "openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
    ]
    assert structural_problems({"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"any": {"x-kubernetes-preserve-unknown-fields": True}, "ios": {"x-kubernetes-int-or-string": True}}}) == []


def _crd(**spec):
    base = {
        "group": "stable.example.com", "scope": "Namespaced",
        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": ["ct"]},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": CRONTAB_SCHEMA}}],
    }
    base.update(spec)
    return from_dict({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "crontabs.stable.example.com"}, "spec": base})


def test_crd_validation():
    assert validate_crd(_crd()) == []
    assert validate_crd(_crd(group="example")) == ['metadata.name: Invalid value: "crontabs.stable.example.com": must be spec.names.plural+"."+spec.group', 'spec.group: Invalid value: "example": should be a domain with at least one dot']
    assert validate_crd(_crd(scope="Global")) == ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"']
    two = [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": CRONTAB_SCHEMA}}, {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": CRONTAB_SCHEMA}}]
    assert validate_crd(_crd(versions=two)) == ["spec.versions: Invalid value: versions: must have exactly one version marked as storage version"]
    assert validate_crd(_crd(versions=[{"name": "v1", "served": True, "storage": True}])) == ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]


def test_field_manager_schema_of_a_crd_with_object_and_list_defaults_is_hashable():
    """``default: {}`` on an object (the common way to get nested defaults applied) made the
    server-side field manager's schema unhashable, and every write of such a custom
    resource crashed the API server (found by crd-operator-under-apiserver-failover)."""
    from chaoskube.api.managedfields import custom_schema

    schema, root = custom_schema({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "storage": {"type": "object", "default": {}, "properties": {"class": {"type": "string", "default": "standard"}}},
        "tags": {"type": "array", "default": ["a"], "items": {"type": "string"}},
    }}}})
    assert isinstance(hash(root), int)
    spec = dict(root.inline.map.fields)["spec"]
    assert isinstance(hash(spec), int) and schema.resolve(spec) is not None

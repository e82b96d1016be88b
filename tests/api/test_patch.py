"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902): the RFCs' own examples, then
properties against the diff functions."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.api import patch as patch_module
from chaoskube.api.patch import (
    PatchError,
    apply_patch,
    create_merge_patch,
    create_patch,
    json_equal,
    merge_patch,
    parse_pointer,
)


def test_module_exports_exactly_what_it_lists():
    for name in patch_module.__all__:
        assert hasattr(patch_module, name), name
    assert patch_module.__all__ == sorted(patch_module.__all__)


# --------------------------------------------------------------------------- RFC 7386 appendix A

RFC7386_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_EXAMPLES)
def test_rfc7386_appendix_a(target, patch, expected):
    before_target, before_patch = json.dumps(target), json.dumps(patch)
    assert merge_patch(target, patch) == expected
    assert json.dumps(target) == before_target and json.dumps(patch) == before_patch, "inputs untouched"


def test_rfc7386_section_3_example():
    target = {"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"}, "tags": ["example", "sample"], "content": "This will be unchanged"}
    patch = {"title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": {"familyName": None}, "tags": ["example"]}
    assert merge_patch(target, patch) == {
        "title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
        "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890",
    }


def test_merge_patch_result_shares_nothing_with_the_patch():
    patch = {"a": {"b": [1, 2]}}
    result = merge_patch({}, patch)
    result["a"]["b"].append(3)
    assert patch == {"a": {"b": [1, 2]}}


# --------------------------------------------------------------------------- RFC 6902 appendix A

RFC6902_EXAMPLES = [
    ("A.1 adding an object member", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    ("A.2 adding an array element", {"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]}),
    ("A.3 removing an object member", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ("A.4 removing an array element", {"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    ("A.5 replacing a value", {"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"}),
    (
        "A.6 moving a value",
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    ("A.7 moving an array element", {"foo": ["all", "grass", "cows", "eats"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}], {"foo": ["all", "cows", "eats", "grass"]}),
    (
        "A.8 testing a value: success",
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    ("A.10 adding a nested member object", {"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}], {"foo": "bar", "child": {"grandchild": {}}}),
    ("A.11 ignoring unrecognized elements", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}], {"foo": "bar", "baz": "qux"}),
    ("A.14 ~ escape ordering", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    ("A.16 adding an array value", {"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]}),
]


@pytest.mark.parametrize(("name", "document", "patch", "expected"), RFC6902_EXAMPLES, ids=[e[0] for e in RFC6902_EXAMPLES])
def test_rfc6902_appendix_a(name, document, patch, expected):
    before = json.dumps(document)
    assert apply_patch(document, patch) == expected
    assert json.dumps(document) == before, "the document is untouched"


RFC6902_ERRORS = [
    ("A.9 testing a value: error", {"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], "test failed"),
    ("A.12 adding to a nonexistent target", {"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], "does not exist"),
    ("A.15 comparing strings and numbers", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], "test failed"),
]


@pytest.mark.parametrize(("name", "document", "patch", "message"), RFC6902_ERRORS, ids=[e[0] for e in RFC6902_ERRORS])
def test_rfc6902_appendix_a_errors(name, document, patch, message):
    with pytest.raises(PatchError, match=message) as caught:
        apply_patch(document, patch)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("operation 0 ")


def test_rfc6902_a13_invalid_patch_document_two_ops():
    text = '[{ "op": "add", "path": "/baz", "value": "qux", "op": "remove" }]'
    with pytest.raises(PatchError, match="duplicate member 'op'"):
        apply_patch({"foo": "bar"}, text)


def test_patch_as_json_text():
    assert apply_patch({"foo": "bar"}, '[{"op": "add", "path": "/baz", "value": "qux"}]') == {"foo": "bar", "baz": "qux"}
    with pytest.raises(PatchError, match="not valid JSON"):
        apply_patch({}, "[{")


# --------------------------------------------------------------------------- details of RFC 6902 and 6901

POINTERS = [
    ("", []),
    ("/foo", ["foo"]),
    ("/foo/0", ["foo", "0"]),
    ("/", [""]),
    ("/a~1b", ["a/b"]),
    ("/m~0n", ["m~n"]),
    ("/~01", ["~1"]),
]


@pytest.mark.parametrize(("pointer", "tokens"), POINTERS)
def test_rfc6901_pointers(pointer, tokens):
    assert parse_pointer(pointer) == tokens


@pytest.mark.parametrize("pointer", ["foo", "/a~2", "/a~"])
def test_invalid_pointers(pointer):
    with pytest.raises(PatchError):
        parse_pointer(pointer)


def test_rfc6901_section_5_document():
    document = {"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, 'k"l': 6, " ": 7, "m~n": 8}
    for pointer, value in [("/foo/0", "bar"), ("/", 0), ("/a~1b", 1), ("/c%d", 2), ("/e^f", 3), ("/g|h", 4), ("/i\\j", 5), ('/k"l', 6), ("/ ", 7), ("/m~0n", 8)]:
        assert apply_patch(document, [{"op": "test", "path": pointer, "value": value}]) == document


ERRORS = [
    ("unknown op", {}, [{"op": "merge", "path": "/a"}], "unknown op"),
    ("missing op", {}, [{"path": "/a"}], "missing member 'op'"),
    ("missing path", {}, [{"op": "add", "value": 1}], "missing member 'path'"),
    ("missing value", {}, [{"op": "add", "path": "/a"}], "missing member 'value'"),
    ("missing from", {"a": 1}, [{"op": "move", "path": "/b"}], "missing member 'from'"),
    ("remove missing", {"a": 1}, [{"op": "remove", "path": "/b"}], "does not exist"),
    ("replace missing", {"a": 1}, [{"op": "replace", "path": "/b", "value": 2}], "does not exist"),
    ("index past the end", {"a": [1]}, [{"op": "add", "path": "/a/2", "value": 2}], "out of bounds"),
    ("remove past the end", {"a": [1]}, [{"op": "remove", "path": "/a/1"}], "out of bounds"),
    ("leading zero", {"a": [1, 2]}, [{"op": "remove", "path": "/a/01"}], "not an array index"),
    ("dash on remove", {"a": [1]}, [{"op": "remove", "path": "/a/-"}], "names no existing element"),
    ("negative index", {"a": [1]}, [{"op": "add", "path": "/a/-1", "value": 0}], "not an array index"),
    ("into a scalar", {"a": 1}, [{"op": "add", "path": "/a/b", "value": 0}], "not an object or array"),
    ("move into a child", {"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}], "its own child"),
    ("remove the root", {"a": 1}, [{"op": "remove", "path": ""}], "whole document"),
    ("not a list", {}, {"op": "add", "path": "/a", "value": 1}, "must be an array"),
    ("operation not an object", {}, ["add"], "must be an object"),
    ("test: true is not 1", {"a": 1}, [{"op": "test", "path": "/a", "value": True}], "test failed"),
]


@pytest.mark.parametrize(("name", "document", "patch", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, document, patch, message):
    with pytest.raises(PatchError, match=message) as caught:
        apply_patch(document, patch)
    assert "\n" not in str(caught.value)


def test_a_failing_patch_changes_nothing():
    document = {"a": [1, 2]}
    with pytest.raises(PatchError, match="operation 1"):
        apply_patch(document, [{"op": "remove", "path": "/a/0"}, {"op": "test", "path": "/a/0", "value": 1}])
    assert document == {"a": [1, 2]}


def test_root_operations_and_copy():
    assert apply_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert apply_patch({"a": 1}, [{"op": "add", "path": "", "value": {"b": 2}}]) == {"b": 2}
    copied = apply_patch({"a": {"b": [1]}}, [{"op": "copy", "from": "/a", "path": "/c"}, {"op": "add", "path": "/c/b/-", "value": 2}])
    assert copied == {"a": {"b": [1]}, "c": {"b": [1, 2]}}, "copy is deep"
    assert apply_patch({"a": 1}, [{"op": "move", "from": "/a", "path": "/a"}]) == {"a": 1}
    assert apply_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}]) == {"a": 1}, "1 and 1.0 are one number"


def test_json_equal():
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert not json_equal("1", 1)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal([1], [1, 1])


# --------------------------------------------------------------------------- properties

_scalars = st.none() | st.booleans() | st.integers(-10, 10) | st.text("ab/~", max_size=3)
_keys = st.text("ab/~", max_size=3)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4), max_leaves=12)
_no_nulls = st.recursive(
    st.booleans() | st.integers(-10, 10) | st.text("ab/~", max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(a=st.dictionaries(_keys, _no_nulls, max_size=5), b=st.dictionaries(_keys, _no_nulls, max_size=5))
def test_merge_patch_of_the_diff_gives_b(a, b):
    assert json_equal(merge_patch(a, create_merge_patch(a, b)), b)


@settings(max_examples=150, deadline=None)
@given(a=_json, b=_json)
def test_json_patch_of_the_diff_gives_b(a, b):
    before = json.dumps(a)
    assert json_equal(apply_patch(a, create_patch(a, b)), b)
    assert json.dumps(a) == before


@settings(max_examples=100, deadline=None)
@given(a=_json)
def test_the_diff_of_a_value_with_itself_is_empty(a):
    assert create_patch(a, a) == []
    if isinstance(a, dict):
        assert merge_patch(a, create_merge_patch(a, a)) == a

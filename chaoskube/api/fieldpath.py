"""Field sets and typed merges for server-side apply: a transcription of
kubernetes-sigs/structured-merge-diff (v4..v6) ``fieldpath``, ``schema``, ``typed`` and
``merge`` on plain JSON values, as pure functions.

- A *path element* is one step into a value: a struct or map field (``f:name``), a key of
  an associative list (``k:{"name":"a"}``), a value of a set (``v:"a"``) or an index
  (``i:0``). It is a tuple ``("f", name)``, ``("k", ((field, json), ...))`` sorted by
  field, ``("v", json)`` or ``("i", n)``; values are kept as canonical JSON text so that
  elements hash. A *path* is a tuple of elements; a *set* is a ``frozenset`` of paths (the
  members; the trie upstream builds is only an encoding of it). ``fields_v1`` /
  ``set_from_fields_v1`` write and read the ``fieldsV1`` form of ``managedFields``
  (``fieldpath/serialize.go``: ``"."`` marks a path that is a member and has children).
- A *schema* names types; a type (:class:`Atom`) is a scalar, a list (``atomic``, or
  ``associative`` with ``keys``: a map-list; without keys: a set) or a map (its declared
  fields, an element type for other keys, ``separable`` or ``atomic``), or several of them
  for untyped values, the choice made by the value (``deduceAtom``). :class:`TypeRef`
  names a type or inlines one and may override its element relationship
  (``x-kubernetes-list-type`` / ``map-type`` / ``structType`` on a field).
- ``to_field_set`` (``typed/tofieldset.go``), ``merge_values`` (``typed/merge.go``, with
  its list order), ``compare`` (``typed/compare.go``: added, modified, removed),
  ``remove_items`` (``typed/remove.go``) and :class:`Updater` (``merge/update.go``:
  ``Update`` for a non-apply write, ``Apply`` with conflicts, ``force`` and pruning) are the
  algorithms, step for step.

``extract_items`` / ``leaves`` are ``ExtractItems`` and ``Set.Leaves`` (a client extracting
what it applied from the live object).

``reconcile_field_set_with_schema`` is ``ReconcileFieldSetWithSchema`` (a schema that
changes between writes of one object: a type become atomic is owned as a whole).

Not transcribed: validation errors of
values against their schema (a value of the wrong shape is treated as upstream's walkers
treat it when they ignore the error: as absent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import orjson

__all__ = [
    "NO_CHANGE", "Atom", "Conflict", "ConflictError", "ListType", "MapType", "MissingVersion", "Schema",
    "TypeRef", "Updater", "VersionedSet", "compare", "deduced_schema", "ensure_named_fields_are_members", "extract_items", "leaves", "reconcile_field_set_with_schema",
    "field_element", "fields_v1", "index_element", "key_element", "merge_values", "parse_schema",
    "path_string", "remove_items", "set_from_fields_v1", "set_string", "to_field_set", "value_element",
]

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()
#: What :meth:`Updater.apply` answers for an apply that changes nothing.
NO_CHANGE: Any = type("NoChange", (), {"__repr__": lambda self: "NO_CHANGE"})()
Path = tuple
FieldSet = frozenset


# ----------------------------------------------------------------------------- elements
def _integral(value: Any) -> Any:
    """Go's JSON writes a whole float64 as an integer (``2.0`` -> ``2``), and
    ``value.Compare`` finds them equal."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


def _canon(value: Any) -> str:
    return orjson.dumps(_integral(value), option=orjson.OPT_SORT_KEYS).decode()


def field_element(name: str) -> tuple:
    return ("f", name)


def key_element(*pairs: tuple[str, Any]) -> tuple:
    return ("k", tuple(sorted((name, _canon(value)) for name, value in pairs)))


def value_element(value: Any) -> tuple:
    return ("v", _canon(value))


def index_element(index: int) -> tuple:
    return ("i", index)


def _value_order(value: Any) -> tuple:
    """``value.Compare``: numbers, then strings, booleans, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, float(value), 0 if isinstance(value, float) else 1)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(item) for item in value))
    if isinstance(value, dict):
        return (4, tuple((key, _value_order(value[key])) for key in sorted(value)))
    return (5,)


def element_order(element: tuple) -> tuple:
    """``PathElement.Compare``: field names, then keys, values, indexes."""
    kind, payload = element
    if kind == "f":
        return (0, payload)
    if kind == "k":
        return (1, tuple((name, _value_order(orjson.loads(text))) for name, text in payload), len(payload))
    if kind == "v":
        return (2, _value_order(orjson.loads(payload)))
    return (3, payload)


def _go_string(value: Any) -> str:
    """``value.ToString``."""
    if isinstance(value, str):
        return _canon(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return _canon(value)
    return str(value)


def element_string(element: tuple) -> str:
    kind, payload = element
    if kind == "f":
        return "." + payload
    if kind == "k":
        return "[" + ",".join(f"{name}={_go_string(orjson.loads(text))}" for name, text in payload) + "]"
    if kind == "v":
        return f"[={_go_string(orjson.loads(payload))}]"
    return f"[{payload}]"


def path_string(path: Path) -> str:
    """``fieldpath.Path.String``: ``.spec.containers[name="nginx"].image``."""
    return "".join(element_string(element) for element in path)


def serialize_element(element: tuple) -> str:
    """``SerializePathElement``; ValueError for an element of no known kind."""
    kind, payload = element
    if kind == "f":
        return "f:" + payload
    if kind == "k":
        return "k:{" + ",".join(f"{orjson.dumps(name).decode()}:{text}" for name, text in payload) + "}"
    if kind == "v":
        return "v:" + payload
    if kind == "i":
        return f"i:{payload}"
    raise ValueError(f"invalid PathElement: {element!r}")


class UnknownPathElement(ValueError):
    """``ErrUnknownPathElementType``: a qualifier this version does not know (``r:...``)."""


def deserialize_element(text: str) -> tuple:
    if len(text) < 2 or text[1] != ":":
        raise ValueError(f"invalid path element {text!r}")
    kind, rest = text[0], text[2:]
    if kind == "f":
        return ("f", rest)
    if kind == "v":
        return ("v", _canon(orjson.loads(rest)))
    if kind == "k":
        fields = orjson.loads(rest)
        if not isinstance(fields, dict):
            raise ValueError(f"invalid key element {text!r}")
        return key_element(*fields.items())
    if kind == "i":
        if not rest.lstrip("-").isdigit():
            raise ValueError(f"invalid index in {text!r}")
        return ("i", int(rest))
    raise UnknownPathElement(f"unknown path element type in {text!r}")


# ----------------------------------------------------------------------------- sets
def _trie(paths: Iterable[Path]) -> dict:
    """element -> [is member, children trie]."""
    root: dict = {}
    for path in paths:
        node = root
        for depth, element in enumerate(path):
            entry = node.setdefault(element, [False, {}])
            if depth == len(path) - 1:
                entry[0] = True
            node = entry[1]
    return root


def iterate(paths: Iterable[Path]) -> list[Path]:
    """The members in ``Set.Iterate`` order: a level's members first, then its children."""
    out: list[Path] = []

    def walk(node: dict, prefix: Path) -> None:
        ordered = sorted(node, key=element_order)
        for element in ordered:
            if node[element][0]:
                out.append(prefix + (element,))
        for element in ordered:
            if node[element][1]:
                walk(node[element][1], prefix + (element,))

    walk(_trie(paths), ())
    return out


_FIELDS_V1: dict[frozenset, dict] = {}
_FROM_FIELDS_V1: dict[bytes, frozenset] = {}
_CACHE_BOUND = 8192  # entries; both caches start over past it


def fields_v1(paths: Iterable[Path]) -> dict:
    """The ``fieldsV1`` JSON object of a set (``Set.ToJSON``). The answer for a frozenset is
    remembered and shared: callers must not change it."""
    if isinstance(paths, frozenset):
        cached = _FIELDS_V1.get(paths)
        if cached is None:
            if len(_FIELDS_V1) > _CACHE_BOUND:
                _FIELDS_V1.clear()
            cached = _FIELDS_V1[paths] = _fields_v1(paths)
        return cached
    return _fields_v1(paths)


def _fields_v1(paths: Iterable[Path]) -> dict:

    def emit(node: dict) -> dict:
        out: dict = {}
        for element in sorted(node, key=element_order):
            member, children = node[element]
            if children:
                inner = {".": {}} if member else {}
                inner.update(emit(children))
                out[serialize_element(element)] = inner
            else:
                out[serialize_element(element)] = {}
        return out

    return emit(_trie(paths))


def set_from_fields_v1(document: Any) -> frozenset:
    """``Set.FromJSON``; raises ValueError on a malformed document. Elements of an unknown
    kind are dropped with what is under them ("a future version maybe knows what they are")."""
    if not isinstance(document, dict):
        raise ValueError("fieldsV1 is a JSON object")
    key = orjson.dumps(document)
    cached = _FROM_FIELDS_V1.get(key)
    if cached is None:
        if len(_FROM_FIELDS_V1) > _CACHE_BOUND:
            _FROM_FIELDS_V1.clear()
        cached = _FROM_FIELDS_V1[key] = _set_from_fields_v1(document)
    return cached


def _set_from_fields_v1(document: dict) -> frozenset:
    out: set = set()

    def read(node: dict, prefix: Path) -> None:
        for text, inner in node.items():
            if text == ".":
                if prefix:
                    out.add(prefix)
                continue
            if not isinstance(inner, dict):
                raise ValueError(f"fieldsV1: the value of {text!r} is not an object")
            try:
                path = prefix + (deserialize_element(text),)
            except UnknownPathElement:
                continue
            if not inner:
                out.add(path)
            else:
                read(inner, path)

    read(document, ())
    return frozenset(out)


def set_string(paths: Iterable[Path]) -> str:
    return "\n".join(path_string(path) for path in iterate(paths))


def with_prefix(paths: frozenset, element: tuple) -> frozenset:
    return frozenset(path[1:] for path in paths if len(path) > 1 and path[0] == element)


# ----------------------------------------------------------------------------- schema
@dataclass(frozen=True)
class TypeRef:
    named: str = ""
    inline: "Atom | None" = None
    element_relationship: str = ""  # overrides the resolved list's or map's


@dataclass(frozen=True)
class ListType:
    element: TypeRef
    relationship: str = "atomic"  # "atomic" | "associative"
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class MapType:
    fields: tuple[tuple[str, TypeRef], ...] = ()
    element: TypeRef | None = None
    relationship: str = "separable"  # "separable" | "atomic" (structType/mapType=atomic)
    defaults: tuple[tuple[str, Any], ...] = ()

    def find(self, name: str) -> TypeRef | None:
        try:
            index = self.__dict__["_index"]
        except KeyError:  # built once: the first of two fields of the same name wins, as the scan did
            index = {}
            for field_name, ref in self.fields:
                index.setdefault(field_name, ref)
            object.__setattr__(self, "_index", index)  # not a dataclass field: eq, hash, repr unchanged
        return index.get(name)

    def child(self, name: str) -> TypeRef | None:
        return self.find(name) or self.element


@dataclass(frozen=True)
class Atom:
    scalar: str | None = None
    list: ListType | None = None
    map: MapType | None = None


UNTYPED_ATOMIC = "__untyped_atomic_"
UNTYPED_DEDUCED = "__untyped_deduced_"
_BUILTIN = {
    UNTYPED_ATOMIC: Atom(scalar="untyped", list=ListType(TypeRef(UNTYPED_ATOMIC), "atomic"), map=MapType(element=TypeRef(UNTYPED_ATOMIC), relationship="atomic")),
    UNTYPED_DEDUCED: Atom(scalar="untyped", list=ListType(TypeRef(UNTYPED_ATOMIC), "atomic"), map=MapType(element=TypeRef(UNTYPED_DEDUCED), relationship="separable")),
}


class Schema:
    """Named types; ``resolve`` follows a :class:`TypeRef` (``schema.Schema.Resolve``).
    ``lazy``: a function that builds a named type the first time it is asked for."""

    def __init__(self, types: dict[str, Atom] | None = None, lazy: Callable[[str], Atom | None] | None = None) -> None:
        self.types: dict[str, Atom] = dict(_BUILTIN)
        self.types.update(types or {})
        self._lazy = lazy
        self._resolved: dict[TypeRef, Atom | None] = {}
        #: resolve's answers by id(ref), with the ref kept (so its id is not reused): a
        #: TypeRef is a frozen dataclass whose hash walks its whole inline type on every call
        self._by_id: dict[int, tuple[TypeRef, Atom | None]] = {}
        #: reconcile_field_set_with_schema's answers (a schema does not change once built)
        self._reconciled: dict[tuple, frozenset | None] = {}

    def resolve(self, ref: TypeRef | None) -> Atom | None:
        if ref is None:
            return None
        known = self._by_id.get(id(ref))
        if known is not None and known[0] is ref:
            return known[1]
        try:
            atom = self._resolved[ref]
        except KeyError:
            atom = self._resolve_new(ref)
        if len(self._by_id) > 65536:
            self._by_id.clear()
        self._by_id[id(ref)] = (ref, atom)
        return atom

    def _resolve_new(self, ref: TypeRef) -> Atom | None:
        atom: Atom | None
        if ref.inline is not None:
            atom = ref.inline
        else:
            atom = self.types.get(ref.named)
            if atom is None and self._lazy is not None and ref.named:
                atom = self._lazy(ref.named)
                if atom is not None:
                    self.types[ref.named] = atom
        if atom is not None and ref.element_relationship:
            if atom.list is not None:
                atom = Atom(scalar=atom.scalar, list=ListType(atom.list.element, ref.element_relationship, atom.list.keys), map=atom.map)
            if atom.map is not None:
                atom = Atom(scalar=atom.scalar, list=atom.list, map=MapType(atom.map.fields, atom.map.element, ref.element_relationship, atom.map.defaults))
        self._resolved[ref] = atom
        return atom


def deduced_schema() -> tuple[Schema, TypeRef]:
    return Schema(), TypeRef(UNTYPED_DEDUCED)


def _parse_ref(document: Any) -> TypeRef:
    if not isinstance(document, dict):
        raise ValueError(f"invalid type reference {document!r}")
    relationship = document.get("elementRelationship", "")
    if "namedType" in document:
        return TypeRef(named=document["namedType"], element_relationship=relationship)
    return TypeRef(inline=_parse_atom(document), element_relationship=relationship)


def _parse_atom(document: dict) -> Atom:
    scalar = document.get("scalar")
    lst = mp = None
    if "list" in document:
        spec = document["list"] or {}
        lst = ListType(_parse_ref(spec.get("elementType", {"namedType": UNTYPED_DEDUCED})), spec.get("elementRelationship", "atomic"), tuple(spec.get("keys") or ()))
    if "map" in document:
        spec = document["map"] or {}
        fields = tuple((entry["name"], _parse_ref(entry["type"])) for entry in spec.get("fields") or ())
        defaults = tuple((entry["name"], entry["default"]) for entry in spec.get("fields") or () if "default" in entry)
        element = _parse_ref(spec["elementType"]) if "elementType" in spec else None
        mp = MapType(fields, element, spec.get("elementRelationship", "separable") or "separable", defaults)
    if "untyped" in document:
        return _BUILTIN[UNTYPED_DEDUCED]
    return Atom(scalar=scalar, list=lst, map=mp)


def parse_schema(document: Any) -> Schema:
    """A schema in structured-merge-diff's YAML form (``types: - name: ... map: ...``),
    as its tests and ``typed.NewParser`` write it (already loaded from YAML)."""
    types = {entry["name"]: _parse_atom(entry) for entry in (document or {}).get("types") or ()}
    return Schema(types)


# ----------------------------------------------------------------------------- walking helpers
def _deduce(atom: Atom, value: Any) -> Atom:
    if value is MISSING or value is None:
        return atom
    if isinstance(value, (bool, int, float, str)):
        return Atom(scalar=atom.scalar) if atom.scalar is not None else atom
    if isinstance(value, list):
        return Atom(list=atom.list) if atom.list is not None else atom
    if isinstance(value, dict):
        return Atom(map=atom.map) if atom.map is not None else atom
    return atom


def _kind(atom: Atom) -> str:
    """``handleAtom``: a map first, then a scalar, then a list."""
    if atom.map is not None:
        return "map"
    if atom.scalar is not None:
        return "scalar"
    if atom.list is not None:
        return "list"
    raise ValueError("schema error: invalid atom")


def _resolve(schema: Schema, ref: TypeRef | None, value: Any) -> Atom:
    atom = schema.resolve(ref)
    if atom is None:
        atom = _BUILTIN[UNTYPED_DEDUCED]  # a field not declared: treated as untyped
    return atom


class ListItemError(ValueError):
    pass


def list_item_element(schema: Schema, lst: ListType, item: Any) -> tuple:
    """``listItemToPathElement``."""
    if lst.relationship != "associative":
        raise ListItemError("invalid indexing of non-associative list")
    if lst.keys:
        if item is None:
            raise ListItemError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise ListItemError("associative list with keys may not have non-map elements")
        element_atom = schema.resolve(lst.element)
        defaults = dict(element_atom.map.defaults) if element_atom is not None and element_atom.map is not None else {}
        pairs = []
        for name in lst.keys:
            if name in item:
                pairs.append((name, item[name]))
            elif defaults.get(name) is not None:
                pairs.append((name, defaults[name]))
        if not pairs:
            raise ListItemError(f"associative list with keys has an element that omits all key fields {list(lst.keys)!r} (and doesn't have default values for any key fields)")
        return key_element(*pairs)
    if isinstance(item, dict):
        raise ListItemError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise ListItemError("not supported: associative list with lists as elements")
    if item is None:
        raise ListItemError("associative list without keys has an element that's an explicit null")
    return value_element(item)


def _as_map(value: Any) -> dict | None:
    return value if isinstance(value, dict) else None


def _as_list(value: Any) -> list | None:
    return value if isinstance(value, list) else None


# ----------------------------------------------------------------------------- to field set
def to_field_set(value: Any, schema: Schema, ref: TypeRef) -> frozenset:
    """``TypedValue.ToFieldSet``: the leaves of ``value``, list items and map keys."""
    out: set = set()
    _tfs(value, schema, ref, (), out)
    return frozenset(out)


def _tfs(value: Any, schema: Schema, ref: TypeRef | None, path: Path, out: set) -> None:
    atom = _deduce(_resolve(schema, ref, value), value)
    kind = _kind(atom)
    if kind == "scalar":
        out.add(path)
        return
    if kind == "list":
        lst = atom.list
        if lst.relationship == "atomic":
            out.add(path)
            return
        items = _as_list(value)
        if items is None:
            return
        seen: set = set()
        duplicates: set = set()
        elements = []
        for item in items:
            try:
                element = list_item_element(schema, lst, item)
            except ListItemError:
                element = None
            elements.append(element)
            if element is None:
                continue
            if element in seen:
                if element not in duplicates:
                    out.add(path + (element,))
                    duplicates.add(element)
            else:
                seen.add(element)
        for item, element in zip(items, elements):
            if element is None or element in duplicates:
                continue
            child = path + (element,)
            _tfs(item, schema, lst.element, child, out)
            out.add(child)
        return
    mp = atom.map
    if mp.relationship == "atomic":
        out.add(path)
        return
    mapping = _as_map(value)
    if mapping is None:
        return
    for key, item in mapping.items():
        declared = mp.find(key)
        child = path + (("f", key),)
        _tfs(item, schema, declared or mp.element, child, out)
        if item is None or (isinstance(item, dict) and not item):
            out.add(child)
        elif declared is None:
            out.add(child)


def ensure_named_fields_are_members(paths: frozenset, schema: Schema, ref: TypeRef) -> frozenset:
    """``Set.EnsureNamedFieldsAreMembers``: every declared struct field on the way to a
    member becomes a member too."""
    out = set(paths)

    def walk(node: dict, ref: TypeRef | None, prefix: Path) -> None:
        atom = schema.resolve(ref) if ref is not None else None
        for element, (_member, children) in node.items():
            child_ref: TypeRef | None = None
            if element[0] == "f" and atom is not None and atom.map is not None:
                declared = atom.map.find(element[1])
                child_ref = declared or atom.map.element
                if declared is not None and children:
                    out.add(prefix + (element,))
            elif element[0] == "k" and atom is not None and atom.list is not None:
                child_ref = atom.list.element
            if children:
                walk(children, child_ref, prefix + (element,))

    walk(_trie(paths), ref, ())
    return frozenset(out)


# ----------------------------------------------------------------------------- merge
def merge_values(lhs: Any, rhs: Any, schema: Schema, ref: TypeRef) -> Any:
    """``TypedValue.Merge`` (rule keepRHS): ``rhs`` merged into ``lhs``; MISSING when
    nothing is left."""
    return _merge(lhs, rhs, schema, ref)


def _merge(lhs: Any, rhs: Any, schema: Schema, ref: TypeRef | None) -> Any:
    atom = _resolve(schema, ref, rhs if rhs is not MISSING else lhs)
    atom = _deduce(atom, rhs) if rhs is not MISSING else _deduce(atom, lhs)
    kind = _kind(atom)

    def leaf() -> Any:
        return rhs if rhs is not MISSING else lhs

    if kind == "scalar":
        return leaf()
    if kind == "list":
        lst = atom.list
        left = _as_list(lhs) if lhs is not MISSING else None
        right = _as_list(rhs) if rhs is not MISSING else None
        if lst.relationship == "atomic" or (not left and not right):
            return leaf()
        return _merge_list(lst, left, right, schema)
    mp = atom.map
    left = _as_map(lhs) if lhs is not MISSING else None
    right = _as_map(rhs) if rhs is not MISSING else None
    if mp.relationship == "atomic" or (not left and not right):
        return leaf()
    out: dict = {}
    keys = list(left or {}) + [key for key in (right or {}) if key not in (left or {})]
    for key in keys:
        child = _merge((left or {}).get(key, MISSING), (right or {}).get(key, MISSING), schema, mp.child(key))
        if child is not MISSING:
            out[key] = child
    return out if out else MISSING


def _index(schema: Schema, lst: ListType, items: list | None, allow_duplicates: bool) -> tuple[list, dict]:
    elements: list = []
    observed: dict = {}
    for position, item in enumerate(items or ()):
        element = list_item_element(schema, lst, item)
        if element in observed:
            if not allow_duplicates:
                raise ListItemError(f"duplicate entries for key {element_string(element)}")
            observed[element] = None  # a duplicated element merges as a null (upstream: NewValueInterface(nil))
        else:
            observed[element] = item
        elements.append((element, position))
    return elements, observed


def _merge_list(lst: ListType, lhs: list | None, rhs: list | None, schema: Schema) -> Any:
    """``visitListItems`` of ``typed/merge.go``, with its ordering of the result."""
    rhs_pes, observed_rhs = _index(schema, lst, rhs, False)
    lhs_pes, observed_lhs = _index(schema, lst, lhs, True)
    out: list = []
    shared_order = [pe for pe, _ in rhs_pes if pe in observed_lhs]
    next_shared = shared_order.pop(0) if shared_order else None
    merged_rhs: set = set()

    def item(left: Any, right: Any) -> None:
        merged = _merge(left, right, schema, lst.element)
        if merged is not MISSING:
            out.append(merged)

    l_index = r_index = 0
    l_len, r_len = len(lhs_pes), len(rhs_pes)
    while l_index < l_len or r_index < r_len:
        if l_index < l_len and r_index < r_len:
            pe = lhs_pes[l_index][0]
            if pe == rhs_pes[r_index][0]:
                merged_rhs.add(pe)
                item(observed_lhs.get(pe, MISSING), observed_rhs.get(pe, MISSING))
                l_index += 1
                r_index += 1
                next_shared = shared_order.pop(0) if shared_order else None
                continue
            if pe in observed_rhs and next_shared is not None and next_shared != pe:
                l_index += 1
                continue
        if l_index < l_len:
            pe = lhs_pes[l_index][0]
            if pe not in observed_rhs:
                item(lhs[lhs_pes[l_index][1]], MISSING)
                l_index += 1
                continue
            elif pe in merged_rhs:
                l_index += 1
        if r_index < r_len:
            pe = rhs_pes[r_index][0]
            merged_rhs.add(pe)
            item(observed_lhs.get(pe, MISSING), observed_rhs.get(pe, MISSING))
            r_index += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared_order.pop(0) if shared_order else None
    return out if out else MISSING


# ----------------------------------------------------------------------------- compare
@dataclass
class Comparison:
    added: set = field(default_factory=set)
    modified: set = field(default_factory=set)
    removed: set = field(default_factory=set)

    def empty(self) -> bool:
        return not (self.added or self.modified or self.removed)


def compare(lhs: Any, rhs: Any, schema: Schema, ref: TypeRef) -> Comparison:
    """``TypedValue.Compare``: the paths added, modified and removed from lhs to rhs."""
    result = Comparison()
    _compare(lhs, rhs, schema, ref, (), result)
    return result


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


def _deduced_kind(atom: Atom, value: Any) -> str:
    """``_kind(_deduce(atom, value))`` without building the deduced Atom (the deduced
    atom keeps the one member of ``atom`` that matches the value, so its list and map are
    ``atom``'s)."""
    if value is not MISSING and value is not None:
        if isinstance(value, (bool, int, float, str)):
            if atom.scalar is not None:
                return "scalar"
        elif isinstance(value, list):
            if atom.list is not None:
                return "list"
        elif isinstance(value, dict):
            if atom.map is not None:
                return "map"
    return _kind(atom)


_INT64 = (-(2**63), 2**64 - 1)  # what orjson encodes (past it, _canon raises)


def _same_json(left: Any, right: Any) -> bool:
    """``_canon(left) == _canon(right)`` for two values already ``==``, without encoding
    them: equal values differ in JSON only where a boolean meets a number (``True == 1``);
    a whole float and its integer encode alike (``_integral``), key order is sorted. An
    integer orjson cannot encode takes the encoding (so that it raises as before)."""
    if isinstance(left, dict):
        return all(_same_json(item, right[key]) for key, item in left.items())
    if isinstance(left, list):
        return all(_same_json(a, b) for a, b in zip(left, right))
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right)
    if _wide(left) or _wide(right):
        return _canon(left) == _canon(right)
    return True


def _same_json_fast(left: Any, right: Any) -> bool:
    """:func:`_same_json`, first asking orjson (in C): the same bytes are the same JSON
    (``true`` is not ``1``, ``1.0`` is not ``1``); different bytes (key order, a whole
    float against its integer) or a value orjson refuses take the exact walk."""
    try:
        if orjson.dumps(left) == orjson.dumps(right):
            return True
    except (orjson.JSONEncodeError, TypeError):
        pass
    return _same_json(left, right)


def _wide(value: Any) -> bool:
    if type(value) is float:
        return value.is_integer() and not _INT64[0] <= value <= _INT64[1]
    return type(value) is int and not _INT64[0] <= value <= _INT64[1]


def _leaf(lhs: Any, rhs: Any, path: Path, result: Comparison) -> None:
    if lhs is MISSING:
        result.added.add(path)
    elif rhs is MISSING:
        result.removed.add(path)
    elif not _equal(lhs, rhs):
        result.modified.add(path)


def _added(rhs: Any, schema: Schema, ref: TypeRef | None, path: Path, added: set) -> None:
    """``_compare(MISSING, rhs, ...)``: every path of ``rhs`` is added (a create compares
    against nothing: the walk without the left side's questions)."""
    atom = _resolve(schema, ref, rhs)
    kind = _deduced_kind(atom, rhs)
    if kind == "list":
        lst = atom.list
        if lst.relationship != "atomic" and isinstance(rhs, list) and rhs:
            values: dict = {}
            for item in rhs:
                try:
                    pe = list_item_element(schema, lst, item)
                except ListItemError:
                    continue
                if pe in values:
                    values[pe].append(item)
                else:
                    values[pe] = [item]
            element = lst.element
            for pe, items in values.items():
                if len(items) == 1:
                    _added(items[0], schema, element, path + (pe,), added)
                else:
                    added.add(path + (pe,))
    elif kind == "map":
        mp = atom.map
        if mp.relationship != "atomic" and isinstance(rhs, dict) and rhs:
            for key, item in rhs.items():
                _added(item, schema, mp.child(key), path + (("f", key),), added)
    added.add(path)


def _compare(lhs: Any, rhs: Any, schema: Schema, ref: TypeRef | None, path: Path, result: Comparison) -> None:
    if lhs is MISSING:
        _added(rhs, schema, ref, path, result.added)
        return
    if isinstance(lhs, (dict, list)) and lhs == rhs and _same_json_fast(lhs, rhs):
        return  # an identical subtree has nothing added, modified or removed (a shortcut)
    atom = _resolve(schema, ref, rhs if rhs is not MISSING else lhs)
    kind = _deduced_kind(atom, rhs if rhs is not MISSING else lhs)
    is_leaf = False
    if kind == "scalar":
        _leaf(lhs, rhs, path, result)
        is_leaf = True
    elif kind == "list":
        lst = atom.list
        left = _as_list(lhs) if lhs is not MISSING else None
        right = _as_list(rhs) if rhs is not MISSING else None
        if lst.relationship == "atomic" or (not left and not right):
            _leaf(lhs, rhs, path, result)
            is_leaf = True
        elif left is not None or right is not None:
            _compare_list(lst, left, right, schema, path, result)
    else:
        mp = atom.map
        left = _as_map(lhs) if lhs is not MISSING else None
        right = _as_map(rhs) if rhs is not MISSING else None
        if mp.relationship == "atomic" or (not left and not right):
            _leaf(lhs, rhs, path, result)
            is_leaf = True
        else:
            keys = list(left or {}) + [key for key in (right or {}) if key not in (left or {})]
            for key in keys:
                _compare((left or {}).get(key, MISSING), (right or {}).get(key, MISSING), schema, mp.child(key), path + (("f", key),), result)
    if not is_leaf:
        if lhs is MISSING:
            result.added.add(path)
        elif rhs is MISSING:
            result.removed.add(path)


def _compare_list(lst: ListType, lhs: list | None, rhs: list | None, schema: Schema, path: Path, result: Comparison) -> None:
    all_pes: list = []
    left_values: dict = {}
    for item in lhs or ():
        try:
            pe = list_item_element(schema, lst, item)
        except ListItemError:
            continue
        if pe in left_values:
            left_values[pe].append(item)
        else:
            left_values[pe] = [item]
            all_pes.append(pe)
    right_values: dict = {}
    for item in rhs or ():
        try:
            pe = list_item_element(schema, lst, item)
        except ListItemError:
            continue
        if pe in right_values:
            right_values[pe].append(item)
        else:
            right_values[pe] = [item]
            if pe not in left_values:
                all_pes.append(pe)
    for pe in all_pes:
        left = left_values.get(pe, [])
        right = right_values.get(pe, [])
        child = path + (pe,)
        if len(left) <= 1 and len(right) <= 1:
            _compare(left[0] if left else MISSING, right[0] if right else MISSING, schema, lst.element, child, result)
        elif len(left) >= 2 and len(right) >= 2:
            if len(left) != len(right) or any(not _equal(a, b) for a, b in zip(left, right)):
                result.modified.add(child)
        elif len(left) >= 2:
            if right:
                _compare(MISSING, right[0], schema, lst.element, child, result)
            result.removed.add(child)
        else:
            if left:
                _compare(left[0], MISSING, schema, lst.element, child, result)
            result.added.add(child)


# ----------------------------------------------------------------------------- remove
def remove_items(value: Any, paths: frozenset, schema: Schema, ref: TypeRef) -> Any:
    """``TypedValue.RemoveItems``: ``value`` without the members of ``paths`` (a map or
    list left empty becomes null, as upstream's walker leaves it)."""
    return _remove(value, paths, schema, ref)


def _remove(value: Any, paths: frozenset, schema: Schema, ref: TypeRef | None) -> Any:
    atom = _deduce(_resolve(schema, ref, value), value)
    kind = _kind(atom)
    if kind == "scalar":
        return value
    if kind == "list":
        if not isinstance(value, list) or not value or atom.list.relationship == "atomic":
            return None
        kept = []
        for item in value:
            try:
                pe = list_item_element(schema, atom.list, item)
            except ListItemError:
                kept.append(item)
                continue
            if (pe,) in paths:
                continue
            subset = with_prefix(paths, pe)
            kept.append(_remove(item, subset, schema, atom.list.element) if subset else item)
        return kept if kept else None
    if not isinstance(value, dict) or not value or atom.map.relationship == "atomic":
        return None
    out = {}
    for key, item in value.items():
        element = ("f", key)
        if (element,) in paths:
            continue
        subset = with_prefix(paths, element)
        out[key] = _remove(item, subset, schema, atom.map.child(key)) if subset else item
    return out if out else None


def extract_items(value: Any, paths: frozenset, schema: Schema, ref: TypeRef) -> Any:
    """``TypedValue.ExtractItems``: only the members of ``paths`` (and what is under them)
    of ``value``; None when nothing is left (``removeItemsWithSchema`` with shouldExtract)."""
    atom = _deduce(_resolve(schema, ref, value), value)
    kind = _kind(atom)
    if kind == "scalar":
        return value
    if kind == "list":
        if not isinstance(value, list):
            return None
        if not value or atom.list.relationship == "atomic":
            return value
        kept = []
        for item in value:
            try:
                pe = list_item_element(schema, atom.list, item)
            except ListItemError:
                continue
            subset = with_prefix(paths, pe)
            if subset:
                item = extract_items(item, subset, schema, atom.list.element)
            if (pe,) in paths or subset:
                kept.append(item)
        return kept if kept else None
    if not isinstance(value, dict):
        return None
    if not value or atom.map.relationship == "atomic":
        return value
    out = {}
    for key, item in value.items():
        element = ("f", key)
        if (element,) in paths:
            out[key] = extract_items(item, paths, schema, atom.map.child(key))  # upstream passes the whole set here
            continue
        subset = with_prefix(paths, element)
        if subset:
            out[key] = extract_items(item, subset, schema, atom.map.child(key))
    return out if out else None


def reconcile_field_set_with_schema(paths: frozenset, schema: Schema, ref: TypeRef) -> frozenset | None:
    """``ReconcileFieldSetWithSchema``: a set written under an older schema, brought to the
    current one: a list or map that has become atomic is owned as a whole (its members
    under it dropped, the atomic root added); None when nothing changes. (A type that
    became granular keeps its root member, as upstream.)"""
    key = (paths, ref)
    cache = schema._reconciled
    if key in cache:
        return cache[key]
    to_remove: set = set()
    to_add: set = set()

    def walk(node: dict | None, ref: TypeRef | None, path: Path, is_atomic: bool) -> None:
        atom = schema.resolve(ref)
        if atom is None:
            raise ValueError(f"could not resolve {ref}")
        kind = _kind(atom)
        if kind == "scalar":
            return
        if kind == "list":
            if not is_atomic and atom.list.relationship == "atomic":
                to_remove.add(path)
                to_add.add(path)
                return
            if node:
                visit(node, lambda element: atom.list.element, path)
            return
        mp = atom.map
        if not mp.fields and (mp.element == TypeRef(UNTYPED_DEDUCED) or (mp.element is not None and mp.element.inline is not None and mp.element.inline.scalar == "untyped")):
            return  # an untyped deduced map
        if not is_atomic and mp.relationship == "atomic":
            if node:
                to_remove.add(path)
                to_add.add(path)
            return
        if node:
            visit(node, lambda element: (mp.child(element[1]) if element[0] == "f" else mp.element), path)

    def visit(node: dict, child_ref: Callable[[tuple], TypeRef | None], path: Path) -> None:
        for element, (member, children) in node.items():
            ref = child_ref(element)
            if ref is None:
                continue  # a field not in the schema
            walk(children, ref, path + (element,), member and not children)

    walk(_trie(paths), ref, (), False)
    result = None
    if to_remove or to_add:
        kept = frozenset(path for path in paths if not any(path[: len(prefix)] == prefix for prefix in to_remove))
        result = kept | frozenset(to_add)
    if len(cache) > 4096:
        cache.clear()
    cache[key] = result
    return result


def leaves(paths: frozenset) -> frozenset:
    """``Set.Leaves``: the members that have no member under them."""
    prefixes = {path[:depth] for path in paths for depth in range(1, len(path))}
    return frozenset(path for path in paths if path not in prefixes)


# ----------------------------------------------------------------------------- managers
@dataclass(frozen=True)
class VersionedSet:
    set: frozenset
    api_version: str
    applied: bool


@dataclass(frozen=True)
class Conflict:
    manager: str
    path: Path

    def __str__(self) -> str:
        return f"conflict with {_go_quote(self.manager)}: {path_string(self.path)}"


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


class ConflictError(Exception):
    """``merge.Conflicts``: a non-forced apply would take fields other managers own."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        self.conflicts = conflicts
        super().__init__(self.message())

    def message(self) -> str:
        if len(self.conflicts) == 1:
            return str(self.conflicts[0])
        by_manager: dict[str, list] = {}
        for conflict in self.conflicts:
            by_manager.setdefault(conflict.manager, []).append(conflict.path)
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {_go_quote(manager)}:")
            lines.extend(f"- {path_string(path)}" for path in by_manager[manager])
        return "\n".join(lines)


def conflicts_from_managers(sets: dict[str, VersionedSet]) -> list[Conflict]:
    return [Conflict(manager, path) for manager in sets for path in iterate(sets[manager].set)]


class MissingVersion(Exception):
    """A converter cannot convert to that version (``IsMissingVersionError``)."""


ManagedFields = dict  # manager -> VersionedSet


class Updater:
    """``merge.Updater``: ``update`` records the fields a non-apply write changed;
    ``apply`` merges an applied configuration, prunes what its manager no longer applies
    and refuses (``ConflictError``) fields that other managers own, unless ``force``.

    ``type_for(version)`` is the type of an object at an API version; ``convert(value,
    from_version, to_version)`` converts (identity by default; raises MissingVersion)."""

    def __init__(self, schema: Schema, type_for: Callable[[str], TypeRef], convert: Callable[[Any, str, str], Any] | None = None, *, ignored: dict[str, frozenset] | None = None, return_input_on_noop: bool = False) -> None:
        self.schema = schema
        self.type_for = type_for
        self._convert = convert
        self.ignored = ignored or {}
        self.return_input_on_noop = return_input_on_noop

    def convert(self, value: Any, from_version: str, to_version: str) -> Any:
        if not to_version:
            raise ValueError(f"cannot convert to invalid version: {to_version!r}")
        if self._convert is None or from_version == to_version:
            return value
        return self._convert(value, from_version, to_version)

    def _fs(self, value: Any, version: str) -> frozenset:
        return to_field_set(value, self.schema, self.type_for(version))

    def _ignore(self, paths: frozenset, version: str) -> frozenset:
        ignored = self.ignored.get(version)
        if not ignored:
            return paths
        if all(len(prefix) == 1 for prefix in ignored):  # the usual case (spec, status): one lookup a path
            return frozenset(path for path in paths if path[:1] not in ignored)
        return frozenset(path for path in paths if not any(path[: len(prefix)] == prefix for prefix in ignored))

    def _compare(self, old: Any, new: Any, version: str) -> Comparison:
        result = compare(old, new, self.schema, self.type_for(version))
        if self.ignored.get(version):
            result = Comparison(set(self._ignore(frozenset(result.added), version)), set(self._ignore(frozenset(result.modified), version)), set(self._ignore(frozenset(result.removed), version)))
        return result

    def _update(self, old: Any, new: Any, version: str, managers: dict, workflow: str, force: bool) -> tuple[dict, Comparison]:
        conflicts: dict = {}
        removed: dict = {}
        comparisons = {version: self._compare(old, new, version)}
        for manager in list(managers):
            if manager == workflow:
                continue
            entry = managers[manager]
            comparison = comparisons.get(entry.api_version)
            if comparison is None:
                try:
                    old_v = self.convert(old, version, entry.api_version)
                    new_v = self.convert(new, version, entry.api_version)
                except MissingVersion:
                    del managers[manager]
                    continue
                comparison = comparisons[entry.api_version] = self._compare(old_v, new_v, entry.api_version)
            conflict_set = entry.set & (comparison.modified | comparison.added)
            if conflict_set:
                conflicts[manager] = VersionedSet(frozenset(conflict_set), entry.api_version, False)
            if comparison.removed:
                removed[manager] = VersionedSet(frozenset(comparison.removed), entry.api_version, False)
        if not force and conflicts:
            raise ConflictError(conflicts_from_managers(dict(sorted(conflicts.items()))))
        for manager, entry in conflicts.items():
            current = managers[manager]
            managers[manager] = VersionedSet(current.set - entry.set, current.api_version, current.applied)
        for manager, entry in removed.items():
            current = managers[manager]
            managers[manager] = VersionedSet(current.set - entry.set, current.api_version, current.applied)
        for manager in list(managers):
            if not managers[manager].set:
                del managers[manager]
        return managers, comparisons[version]

    def update(self, live: Any, new: Any, version: str, managers: dict, manager: str) -> tuple[Any, dict]:
        """``Updater.Update``: ``new`` is what will be stored; ``manager`` now owns what it
        added or changed, and nobody owns what it removed."""
        managers = self._reconcile(live, version, managers)
        managers, comparison = self._update(live, new, version, managers, manager, True)
        previous = managers.get(manager, VersionedSet(frozenset(), version, False))
        owned = (previous.set - comparison.removed) | comparison.modified | comparison.added
        owned = self._ignore(frozenset(owned), version)
        managers[manager] = VersionedSet(frozenset(owned), version, False)
        if not managers[manager].set:
            del managers[manager]
        return new, managers

    def apply(self, live: Any, config: Any, version: str, managers: dict, manager: str, force: bool) -> tuple[Any, dict]:
        """``Updater.Apply``: the merged object (``NO_CHANGE`` when it equals ``live``) and
        the new managers; raises ConflictError."""
        managers = self._reconcile(live, version, managers)
        new = _merge(live, config, self.schema, self.type_for(version))
        if new is MISSING:
            new = None
        last = managers.get(manager)
        applied = self._ignore(self._fs(config, version), version)
        managers[manager] = VersionedSet(applied, version, True)
        new = self._prune(new, managers, manager, last, version)
        managers, _ = self._update(live, new, version, managers, manager, force)
        if not self.return_input_on_noop and _canon(live) == _canon(new):
            return NO_CHANGE, managers
        return new, managers

    def _reconcile(self, live: Any, version: str, managers: dict) -> dict:
        """``reconcileManagedFieldsWithSchemaChanges``: every manager's set brought to the
        current schema; a manager whose version no longer converts is dropped."""
        out: dict = {}
        for manager, entry in managers.items():
            try:
                self.convert(live, version, entry.api_version)
            except MissingVersion:
                continue
            reconciled = reconcile_field_set_with_schema(entry.set, self.schema, self.type_for(entry.api_version))
            out[manager] = entry if reconciled is None else VersionedSet(reconciled, entry.api_version, entry.applied)
        return out

    def _prune(self, merged: Any, managers: dict, applying: str, last: VersionedSet | None, version: str) -> Any:
        if last is None or not last.set:
            return merged
        last_version = last.api_version
        try:
            converted = self.convert(merged, version, last_version)
        except MissingVersion:
            return merged
        ref = self.type_for(last_version)
        pruned = (remove_items(converted, ensure_named_fields_are_members(last.set, self.schema, ref), self.schema, ref))
        pruned = self._add_back_owned(converted, pruned, last_version, managers)
        pruned = self._add_back_dangling(converted, pruned, last, last_version)
        return self.convert(pruned, last_version, managers[applying].api_version)

    def _add_back_owned(self, merged: Any, pruned: Any, pruned_version: str, managers: dict) -> Any:
        at_version: dict[str, frozenset] = {}
        for entry in managers.values():
            at_version[entry.api_version] = at_version.get(entry.api_version, frozenset()) | entry.set
        order = ([pruned_version] if pruned_version in at_version else []) + [v for v in at_version if v != pruned_version]
        current = pruned_version
        for version in order:
            try:
                merged = self.convert(merged, current, version)
                pruned = self.convert(pruned, current, version)
            except MissingVersion:
                continue
            current = version
            ref = self.type_for(version)
            merged_set = ensure_named_fields_are_members(to_field_set(merged, self.schema, ref), self.schema, ref)
            pruned_set = ensure_named_fields_are_members(to_field_set(pruned, self.schema, ref), self.schema, ref)
            managed = ensure_named_fields_are_members(at_version[version], self.schema, ref)
            pruned = (remove_items(merged, merged_set - (pruned_set | managed), self.schema, ref))
        return self.convert(pruned, current, pruned_version)

    def _add_back_dangling(self, merged: Any, pruned: Any, last: VersionedSet, version: str) -> Any:
        ref = self.type_for(version)
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, self.schema, ref), self.schema, ref)
        merged_set = ensure_named_fields_are_members(to_field_set(merged, self.schema, ref), self.schema, ref)
        last_set = ensure_named_fields_are_members(last.set, self.schema, ref)
        return (remove_items(merged, (merged_set - pruned_set) & last_set, self.schema, ref))


def _or_empty(value: Any) -> Any:
    return {} if value is None else value

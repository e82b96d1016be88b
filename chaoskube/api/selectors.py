"""Label and field selectors in their string form, as the API server parses and applies them.

Contract:

- :func:`parse_label_selector` accepts exactly the language of apimachinery's
  ``pkg/labels/selector.go`` ``Parse``: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
  ``a notin (x)``, ``a`` (exists), ``!a`` (does not exist), ``a>1`` / ``a<1`` (integers),
  comma = AND, the empty string selects everything. It is a port of that file's lexer and
  recursive-descent parser, so a bad selector raises :class:`SelectorError` with the very
  message Kubernetes gives (``unable to parse requirement: <nil>: Invalid value: "a@b":
  name part must consist of ...``); the API server answers it with 400 BadRequest.
  Keys are checked as ``content.IsLabelKey`` does, values as ``content.IsLabelValue``
  (``apimachinery/pkg/api/validate/content/kube.go``), with the regular expressions that
  :mod:`chaoskube.api.objects` validates labels with.
- :func:`parse_field_selector` accepts the language of ``pkg/fields/selector.go``
  ``ParseSelector`` (``f=v``, ``f==v``, ``f!=v``, comma = AND, ``\\`` escapes ``\\ , =`` in
  values) and then checks every field against the kind's field label conversion function,
  as the API server does (``pkg/apis/core/v1/conversion.go``; the default
  ``runtime.DefaultMetaV1FieldSelectorConversion`` for kinds without one). An unsupported
  field raises :class:`SelectorError` with Kubernetes' message (``field label not supported:
  spec.foo`` for pods, nodes, namespaces and services; ``"spec.foo" is not a known field
  selector: only "metadata.name", "metadata.namespace"`` for the other kinds).
- Matching: :meth:`LabelSelectorExpr.matches` / :meth:`FieldSelectorExpr.matches` take an
  object; a field an object does not expose reads as "" (``fields.Set.Get``), so
  ``status.podIPs=`` matches every pod, as upstream. :func:`selectable_fields` is the set
  each kind exposes (``pkg/registry/core/pod/strategy.go`` ``ToSelectableFields``,
  ``node/strategy.go`` ``NodeToSelectableFields``, ``namespace/strategy.go``,
  ``service/strategy.go``, ``generic.ObjectMetaFieldsSet`` for the rest).

Non-guarantees: the byte-level quirks of Go strings (a NUL byte ends the input, invalid
UTF-8) are not reproduced; ``String()`` forms are for humans, not wire-exact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chaoskube.api.objects import _DNS_SUBDOMAIN, _QUALIFIED_NAME, LabelSelector, Object

__all__ = [
    "EVENTS_V1_FIELDS",
    "EVERYTHING",
    "FieldRequirement",
    "FieldSelectorExpr",
    "LabelSelectorExpr",
    "Requirement",
    "SelectorError",
    "matches",
    "parse_field_selector",
    "parse_label_selector",
    "selectable_fields",
    "selector_from_label_selector",
]


class SelectorError(ValueError):
    """A selector the API server refuses; ``str(error)`` is Kubernetes' message."""


# =========================================================================== label selectors
# Operators as k8s.io/apimachinery/pkg/selection names them.
IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"
_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_SET_OPERATORS = (IN, NOT_IN)
_EXACT_OPERATORS = (EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)


@dataclass(frozen=True, slots=True)
class Requirement:
    """``labels.Requirement``: ``values`` sorted, as ``sets.String.List()`` hands them over."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches`` (selector.go)."""
        operator = self.operator
        if operator in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if operator in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if operator == EXISTS:
            return self.key in labels
        if operator == DOES_NOT_EXIST:
            return self.key not in labels
        assert operator in (GREATER_THAN, LESS_THAN), operator
        if self.key not in labels or len(self.values) != 1:
            return False
        have, want = _int64(labels[self.key]), _int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if operator == GREATER_THAN else have < want

    def __str__(self) -> str:
        prefix = "!" if self.operator == DOES_NOT_EXIST else ""
        if self.operator in (EXISTS, DOES_NOT_EXIST):
            return f"{prefix}{self.key}"
        symbol = {IN: " in ", NOT_IN: " notin ", GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        values = ",".join(self.values)
        return f"{self.key}{symbol}({values})" if self.operator in _SET_OPERATORS else f"{self.key}{symbol}{values}"


@dataclass(frozen=True, slots=True)
class LabelSelectorExpr:
    """A parsed label selector: the AND of ``requirements`` (sorted by key, as ``parse``
    sorts them). ``nothing`` is ``labels.Nothing()``: it matches no object (what a missing
    structured selector converts to)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """Whether it does not restrict the selection (``Selector.Empty``)."""
        return not self.requirements and not self.nothing

    def matches_labels(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for requirement in self.requirements:  # a loop, not all(generator): called per object per watcher
            if not requirement.matches(labels):
                return False
        return True

    def matches(self, obj: Object) -> bool:
        return self.matches_labels(obj.metadata.labels)

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = LabelSelectorExpr()


def _int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or None."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


# -- validation messages (content/kube.go, util/validation/validation.go, field/errors.go) --
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_ERR = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
assert _QUALIFIED_NAME.pattern == _LABEL_KEY_FMT and _DNS_SUBDOMAIN.pattern == _DNS1123_SUBDOMAIN_FMT


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError`` (its double spaces included)."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for index, example in enumerate(examples):
        if index > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _dns1123_subdomain_problems(value: str) -> list[str]:
    problems = []
    if len(value) > 253:
        problems.append(_max_len_error(253))
    if not _DNS_SUBDOMAIN.fullmatch(value):
        problems.append(_regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return problems


def label_key_problems(key: str) -> list[str]:
    """``content.IsLabelKey``: why ``key`` is not a label key (empty: it is one)."""
    parts = key.split("/")
    problems: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + problem for problem in _dns1123_subdomain_problems(prefix))
    else:
        return [
            "a valid label key " + _regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part " + _max_len_error(63))
    if not _QUALIFIED_NAME.fullmatch(name):
        problems.append("name part " + _regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return problems


def label_value_problems(value: str) -> list[str]:
    """``content.IsLabelValue``."""
    problems = []
    if len(value) > 63:
        problems.append(_max_len_error(63))
    if value and not _QUALIFIED_NAME.fullmatch(value):
        problems.append(_regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return problems


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the strings selectors carry (printable text stays as it is)."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif not char.isprintable():
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _invalid(path: str, value: str, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()``; a nil path prints as ``<nil>``."""
    return f"{path}: Invalid value: {_go_quote(value)}: {detail}"


def _aggregate(messages: list[str]) -> str:
    """``ErrorList.ToAggregate().Error()``: duplicates dropped; several are bracketed."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _new_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement`` as the parser calls it (its path is nil)."""
    problems: list[str] = []
    key_problems = label_key_problems(key)
    if key_problems:
        problems.append(_invalid("key", key, "; ".join(key_problems)))
    assert operator not in _SET_OPERATORS or values, "the parser always gives 'in' and 'notin' a value"
    if operator in (GREATER_THAN, LESS_THAN):
        for index, value in enumerate(values):
            if _int64(value) is None:
                problems.append(_invalid(f"values[{index}]", value, "for 'Gt', 'Lt' operators, the value must be an integer"))
    for index, value in enumerate(values):
        value_problems = label_value_problems(value)
        if value_problems:
            problems.append(_invalid(f"values[{index}][{key}]", value, "; ".join(value_problems)))
    if problems:
        raise _ParseError(_aggregate(problems))
    return Requirement(key, operator, tuple(values))


# -- the lexer and parser (selector.go) ----------------------------------------------------
_ERROR, _END, _CLOSED_PAR, _COMMA, _DOES_NOT_EXIST, _DOUBLE_EQUALS = range(6)
_EQUALS, _GREATER_THAN, _IDENTIFIER, _IN, _LESS_THAN, _NOT_EQUALS, _NOT_IN, _OPEN_PAR = range(6, 14)
_TOKENS = {
    ")": _CLOSED_PAR, ",": _COMMA, "!": _DOES_NOT_EXIST, "==": _DOUBLE_EQUALS, "=": _EQUALS,
    ">": _GREATER_THAN, "in": _IN, "<": _LESS_THAN, "!=": _NOT_EQUALS, "notin": _NOT_IN, "(": _OPEN_PAR,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_OPERATOR_OF_TOKEN = {
    _IN: IN, _EQUALS: EQUALS, _DOUBLE_EQUALS: DOUBLE_EQUALS, _GREATER_THAN: GREATER_THAN,
    _LESS_THAN: LESS_THAN, _NOT_IN: NOT_IN, _NOT_EQUALS: NOT_EQUALS,
}


class _ParseError(Exception):
    pass


def _lex(text: str) -> list[tuple[int, str]]:
    """Every token of ``text`` up to and including the end token (``Lexer.Lex``)."""
    tokens: list[tuple[int, str]] = []
    position, length = 0, len(text)
    while True:
        while position < length and text[position] in _WHITESPACE:
            position += 1
        if position >= length:
            tokens.append((_END, ""))
            return tokens
        start = position
        if text[position] in _SPECIAL:
            token, position = _scan_special(text, position)
        else:
            while position < length and text[position] not in _SPECIAL and text[position] not in _WHITESPACE:
                position += 1
            word = text[start:position]
            token = (_TOKENS[word] if word in ("in", "notin") else _IDENTIFIER, word)  # scanIDOrKeyword
        tokens.append(token)
        assert position > start, "the lexer must advance"


def _scan_special(text: str, position: int) -> tuple[tuple[int, str], int]:
    """``scanSpecialSymbol``: the longest run of special characters that is a token."""
    buffer = ""
    last: tuple[int, str] | None = None
    while position < len(text) and text[position] in _SPECIAL:
        candidate = buffer + text[position]
        if candidate in _TOKENS:
            last = (_TOKENS[candidate], candidate)
        elif last is not None:
            break
        buffer = candidate
        position += 1
    if last is None:
        return (_ERROR, f"error expected: keyword found '{buffer}'"), position
    return last, position


class _Parser:
    """selector.go ``Parser``: lookahead and consume in a context (in ``Values`` context the
    words ``in`` and ``notin`` are identifiers)."""

    KEY_AND_OPERATOR, VALUES = 0, 1

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, context: int) -> tuple[int, str]:
        token, literal = self.items[min(self.position, len(self.items) - 1)]
        if context == self.VALUES and token in (_IN, _NOT_IN):
            token = _IDENTIFIER
        return token, literal

    def consume(self, context: int) -> tuple[int, str]:
        token, literal = self.lookahead(context)
        self.position += 1
        return token, literal

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:  # bounded: every round consumes at least one token
            token, literal = self.lookahead(self.VALUES)
            if token == _END:
                return requirements
            if token not in (_IDENTIFIER, _DOES_NOT_EXIST):
                raise _ParseError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self.parse_requirement())
            except _ParseError as error:
                raise _ParseError(f"unable to parse requirement: {error}") from None
            token, literal = self.consume(self.VALUES)
            if token == _END:
                return requirements
            if token != _COMMA:
                raise _ParseError(f"found '{literal}', expected: ',' or 'end of string'")
            token, literal = self.lookahead(self.VALUES)
            if token not in (_IDENTIFIER, _DOES_NOT_EXIST):
                raise _ParseError(f"found '{literal}', expected: identifier after ','")

    def parse_requirement(self) -> Requirement:
        key, operator = self.parse_key_and_infer_operator()
        if operator in (EXISTS, DOES_NOT_EXIST):
            return _new_requirement(key, operator, [])
        operator = self.parse_operator()
        values = self.parse_values() if operator in _SET_OPERATORS else self.parse_exact_value()
        return _new_requirement(key, operator, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        operator = ""
        token, literal = self.consume(self.VALUES)
        if token == _DOES_NOT_EXIST:
            operator = DOES_NOT_EXIST
            token, literal = self.consume(self.VALUES)
        if token != _IDENTIFIER:
            raise _ParseError(f"found '{literal}', expected: identifier")
        problems = label_key_problems(literal)
        if problems:
            raise _ParseError(_invalid("<nil>", literal, "; ".join(problems)))
        following, _ = self.lookahead(self.VALUES)
        if following in (_END, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        return literal, operator

    def parse_operator(self) -> str:
        token, literal = self.consume(self.KEY_AND_OPERATOR)
        operator = _OPERATOR_OF_TOKEN.get(token)
        if operator is None:
            raise _ParseError(f"found '{literal}', expected: {', '.join(_BINARY_OPERATORS)}")
        return operator

    def parse_values(self) -> set[str]:
        token, literal = self.consume(self.VALUES)
        if token != _OPEN_PAR:
            raise _ParseError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead(self.VALUES)
        if token in (_IDENTIFIER, _COMMA):
            values = self.parse_identifiers_list()
            if self.consume(self.VALUES)[0] != _CLOSED_PAR:
                raise _ParseError(f"found '{literal}', expected: ')'")  # sic: the earlier literal
            return values
        if token == _CLOSED_PAR:
            self.consume(self.VALUES)
            return {""}
        raise _ParseError(f"found '{literal}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:  # bounded: every round consumes a token, and the end token stops it
            token, literal = self.consume(self.VALUES)
            if token == _IDENTIFIER:
                values.add(literal)
                following, following_literal = self.lookahead(self.VALUES)
                if following == _COMMA:
                    continue
                if following == _CLOSED_PAR:
                    return values
                raise _ParseError(f"found '{following_literal}', expected: ',' or ')'")
            if token != _COMMA:
                raise _ParseError(f"found '{literal}', expected: ',', or identifier")
            if not values:
                values.add("")  # "(,"
            following, _ = self.lookahead(self.VALUES)
            if following == _CLOSED_PAR:
                values.add("")  # ",)"
                return values
            if following == _COMMA:
                values.add("")  # ",,"

    def parse_exact_value(self) -> set[str]:
        token, _ = self.lookahead(self.VALUES)
        if token in (_END, _COMMA):
            return {""}
        token, literal = self.consume(self.VALUES)
        if token == _IDENTIFIER:
            return {literal}
        raise _ParseError(f"found '{literal}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelectorExpr:
    """``labels.Parse``: raises :class:`SelectorError` with Kubernetes' message."""
    try:
        requirements = _Parser(text).parse()
    except _ParseError as error:
        raise SelectorError(str(error)) from None
    return LabelSelectorExpr(tuple(sorted(requirements, key=lambda requirement: requirement.key)))


def selector_from_label_selector(selector: LabelSelector | None) -> LabelSelectorExpr:
    """``metav1.LabelSelectorAsSelector``: None selects nothing, an empty selector
    everything; ``matchLabels`` become ``=`` requirements. Agrees with
    :func:`chaoskube.api.objects.matches`."""
    if selector is None:
        return LabelSelectorExpr(nothing=True)
    requirements = [Requirement(key, EQUALS, (value,)) for key, value in selector.match_labels.items()]
    operators = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
    for expression in selector.match_expressions:
        requirements.append(Requirement(expression.key, operators[expression.operator], tuple(sorted(set(expression.values)))))
    return LabelSelectorExpr(tuple(sorted(requirements, key=lambda requirement: requirement.key)))


# =========================================================================== field selectors
@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """``hasTerm`` (operator ``=``) or ``notHasTerm`` (``!=``); ``==`` parses as ``=``."""

    field: str
    operator: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        have = fields.get(self.field, "")  # fields.Set.Get: a missing field reads as ""
        return have == self.value if self.operator == EQUALS else have != self.value

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{self.operator}{escaped}"


@dataclass(frozen=True, slots=True)
class FieldSelectorExpr:
    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches_fields(self, fields: Mapping[str, str]) -> bool:
        for requirement in self.requirements:  # a loop, not all(generator): called per object per watcher
            if not requirement.matches(fields):
                return False
        return True

    def matches(self, obj: Object) -> bool:
        if not self.requirements:
            return True
        return self.matches_fields(selectable_fields(obj))

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


_NOT_SUPPORTED = "field label not supported: {}"
# Field label conversion functions (pkg/apis/core/v1/conversion.go), by resource: the
# fields accepted and the aliases they convert (Pod's "spec.host" is "spec.nodeName").
_CONVERSIONS: dict[str, tuple[frozenset[str], dict[str, str]]] = {
    "pods": (
        frozenset({
            "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
            "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
            "status.nominatedNodeName",
        }),
        {"spec.host": "spec.nodeName"},
    ),
    "nodes": (frozenset({"metadata.name", "spec.unschedulable"}), {}),
    "namespaces": (frozenset({"status.phase", "metadata.name"}), {}),
    "services": (frozenset({"metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"}), {}),
    "events": (
        frozenset({
            "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
            "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
            "reason", "reportingComponent", "source", "type", "metadata.namespace", "metadata.name",
        }),
        {},
    ),
}
#: events.k8s.io/v1's field label conversion (``pkg/apis/events/v1/conversion.go``
#: ``AddFieldLabelConversionsForEvent``): its names for the core Event's fields.
EVENTS_V1_FIELDS: dict[str, str] = {
    "reason": "reason",
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "type": "type",
    "metadata.namespace": "metadata.namespace",
    "metadata.name": "metadata.name",
}
_DEFAULT_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def _convert_field(resource: str, field: str) -> str:
    """The kind's field label conversion: the field to select on, or SelectorError."""
    conversion = _CONVERSIONS.get(resource)
    if conversion is None:  # runtime.DefaultMetaV1FieldSelectorConversion
        if field in _DEFAULT_FIELDS:
            return field
        raise SelectorError(f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"')
    supported, aliases = conversion
    if field in aliases:
        return aliases[field]
    if field in supported:
        return field
    raise SelectorError(_NOT_SUPPORTED.format(field))


def _split_terms(text: str) -> list[str]:
    """``splitTerms``: commas not escaped by a backslash separate terms."""
    if not text:
        return []
    terms, start, escaped = [], 0, False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """``splitTerm``: the first ``!=``, ``==`` or ``=`` splits field from value."""
    for index in range(len(term)):
        for operator in ("!=", "==", "="):
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator):]
    return None


def _unescape(value: str) -> str:
    """``UnescapeValue``: ``\\\\``, ``\\,`` and ``\\=`` are the only escapes; a bare ``,``
    or ``=`` is an error."""
    if not any(char in value for char in "\\,="):
        return value
    out, escaped = [], False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(char)}")  # %v of a rune
        else:
            out.append(char)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str, resource: str) -> FieldSelectorExpr:
    """``fields.ParseSelector`` then ``Transform`` with ``resource``'s field label
    conversion (see the module docstring). Terms are sorted, as ``parseSelector`` sorts."""
    requirements = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, operator, raw = split
        value = _unescape(raw)
        requirements.append(FieldRequirement(field, NOT_EQUALS if operator == "!=" else EQUALS, value))
    converted = [FieldRequirement(_convert_field(resource, item.field), item.operator, item.value) for item in requirements]
    return FieldSelectorExpr(tuple(converted))


def selectable_fields(obj: Object) -> dict[str, str]:
    """The fields ``obj`` can be selected by (each kind's ``GetAttrs`` field set)."""
    fields = {"metadata.name": obj.metadata.name}
    kind = obj.KIND
    if obj.NAMESPACED:  # generic.AddObjectMetaFieldsSet(..., hasNamespaceField)
        fields["metadata.namespace"] = obj.metadata.namespace
    if kind == "Pod":
        fields.update(_pod_fields(obj))
    elif kind == "Node":
        fields["spec.unschedulable"] = "true" if obj.spec.unschedulable else "false"
    elif kind == "Namespace":
        fields["status.phase"] = obj.status.phase
        fields["name"] = obj.metadata.name  # upstream keeps this old field for compatibility
    elif kind == "Service":
        fields["spec.clusterIP"] = obj.spec.cluster_ip
        fields["spec.type"] = obj.spec.type
    elif kind == "Event":
        fields.update(_event_fields(obj))
    return fields


def _event_fields(event: Any) -> dict[str, str]:
    """``event.ToSelectableFields`` (``pkg/registry/core/event/strategy.go``): ``source`` is
    the source component, else the reporting controller."""
    involved = event.involved_object
    return {
        "involvedObject.kind": involved.kind,
        "involvedObject.namespace": involved.namespace,
        "involvedObject.name": involved.name,
        "involvedObject.uid": involved.uid,
        "involvedObject.apiVersion": involved.api_version,
        "involvedObject.resourceVersion": involved.resource_version,
        "involvedObject.fieldPath": involved.field_path,
        "reason": event.reason,
        "reportingComponent": event.reporting_component,
        "source": event.source.component or event.reporting_component,
        "type": event.type,
    }


def _pod_fields(pod: Any) -> dict[str, str]:
    """``pod.ToSelectableFields`` (pkg/registry/core/pod/strategy.go). ``status.podIP`` is
    ``status.podIPs[0].ip``; our pods may carry only ``podIP``, which is then used."""
    ips = pod.status.pod_ips
    first = ips[0].get("ip", "") if ips and isinstance(ips[0], dict) else ""
    return {
        "spec.nodeName": pod.spec.node_name,
        "spec.restartPolicy": pod.spec.restart_policy,
        "spec.schedulerName": pod.spec.scheduler_name,
        "spec.serviceAccountName": pod.spec.service_account_name,
        "spec.hostNetwork": "true" if pod.spec.host_network else "false",
        "status.phase": pod.status.phase,
        "status.podIP": first or pod.status.pod_ip,
        "status.nominatedNodeName": pod.status.nominated_node_name,
    }


def matches(obj: Object, label_expr: LabelSelectorExpr | None, field_expr: FieldSelectorExpr | None) -> bool:
    """Whether ``obj`` passes both selectors (None: no restriction)."""
    if label_expr is not None and not label_expr.matches(obj):
        return False
    return field_expr is None or field_expr.matches(obj)

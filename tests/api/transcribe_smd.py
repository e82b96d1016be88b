"""Transcribes structured-merge-diff's merge table tests (``merge/*_test.go``) into
``data/smd_merge_cases.json``: every ``tests := map[string]TestCase{...}`` table, row by
row, with the schema its parser declares. Run by hand against a checkout:

    python tests/api/transcribe_smd.py /path/to/structured-merge-diff COMMIT

The Go literals are rewritten into Python expressions (builders below) and evaluated; no
row is dropped: a row whose operations this cannot express is written with ``"untranscribable"``
and the reason, and the test marks it xfail."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys

FILES = ["leaf", "set", "key", "nested", "multiple_appliers", "deduced", "default_keys", "duplicates",
         "field_level_overrides", "preserve_unknown", "schema_change", "ignore", "extract_apply"]


def _pe(value):
    if isinstance(value, str):
        return "f:" + value
    return value


class _Key:
    def __init__(self, *pairs):
        fields = dict(zip(pairs[0::2], pairs[1::2]))
        self.text = "k:" + json.dumps(dict(sorted(fields.items())), separators=(",", ":"))


class _Val:
    def __init__(self, value):
        self.text = "v:" + json.dumps(value, separators=(",", ":"))


def _P(*elements):
    out = []
    for element in elements:
        if isinstance(element, str):
            out.append("f:" + element)
        elif isinstance(element, int):
            out.append(f"i:{element}")
        else:
            out.append(element.text)
    return out


def _NS(*paths):
    return [list(path) for path in paths]


def builders():
    def op(kind):
        return lambda **fields: {"op": kind, **fields}

    return {
        "_P": _P, "_NS": _NS, "_KBF": _Key, "_V": _Val, "_SV": _Val,
        "Apply": op("Apply"), "ForceApply": op("ForceApply"), "Update": op("Update"), "ExtractApply": op("ExtractApply"),
        "ChangeParser": op("ChangeParser"), "fieldpath_Set": None, "float64": float,
        "fieldpath_NewVersionedSet": lambda paths, version, applied: {"set": paths, "apiVersion": version, "applied": applied},
        "fieldpath_NewSet": _NS, "fieldpath_MakePathOrDie": _P, "fieldpath_APIVersion": lambda text: text,
        "merge_Conflict": lambda **fields: {"manager": fields["Manager"], "path": fields["Path"]},
        "fieldpath_NewExcludeSetFilter": lambda paths: {"exclude": paths},
        "fieldpath_MakePrefixMatcherOrDie": lambda *elements: {"prefix": elements},
        "TestCase": lambda **fields: fields, "True": True, "False": False, "None": None,
        "value_NewValueInterface": _Val, "_sprintf": lambda text, *args: text.replace("%s", "{}").format(*args),
    }


_CALL_TYPES = {"Apply", "ForceApply", "Update", "ExtractApply", "ChangeParser", "merge_Conflict", "TestCase"}
_LIST_TYPES = {"[]Operation", "merge_Conflicts", "[]interface"}


def go_to_python(source: str) -> str:
    strings: list[str] = []

    def keep(match: re.Match) -> str:
        text = match.group(0)
        strings.append(repr(text[1:-1]) if text[0] == "`" else text)
        return f"__S{len(strings) - 1}__"

    code = re.sub(r'`[^`]*`|"(?:[^"\\\n]|\\.)*"', keep, source)
    code = re.sub(r"//[^\n]*", "", code)
    code = code.replace("typed.YAMLObject(", "(").replace("fmt.Sprintf(", "_sprintf(")
    code = re.sub(r"fieldpath\.|merge\.|value\.", lambda m: m.group(0)[:-1] + "_", code)
    out = ""
    stack = []
    for c in code:
        if c == "{":
            prefix = re.search(r"((?:\[\])?(?:map\[\w+\]\*?)?[A-Za-z_]\w*)\s*$", out)
            name = prefix.group(1) if prefix else ""
            if name in _CALL_TYPES:
                out += "(**{"
                stack.append("call")
            elif name in _LIST_TYPES or name.startswith("[]"):
                out = out[: len(out) - len(name)] + "["
                stack.append("list")
            else:
                if name and re.match(r"(map\[\w+\]\*?\w+|fieldpath_ManagedFields)$", name):
                    out = out[: len(out) - len(name)]
                out += "{"
                stack.append("dict")
            continue
        if c == "}":
            out += {"call": "})", "list": "]", "dict": "}"}[stack.pop()]
            continue
        out += c
    out = re.sub(r"([{,]\s*)([A-Z][A-Za-z]*):", r'\1"\2":', out)
    out = re.sub(r"\btrue\b", "True", out)
    out = re.sub(r"\bfalse\b", "False", out)
    out = re.sub(r"\bnil\b", "None", out)
    return re.sub(r"__S(\d+)__", lambda m: strings[int(m.group(1))], out)


def _runner(body: str) -> tuple[str, str]:
    run = re.search(r"test\.(Test|TestWithConverter)\((\w+)(?:, (\w+(?:\{\w+\})?))?\)", body)
    if not run:
        return "", ""
    converter = run.group(3) or ""
    assigned = re.search(r"converter := (\w+)", body)
    if converter == "converter" and assigned:
        converter = assigned.group(1)
    return run.group(2), converter


def extract_tables(source: str):
    """(test function, parser expression, converter, table source, versions) for each table:
    ``tests := map[string]TestCase{...}`` of a ``TestX(t)``; of a ``testX(t, v1, v2, v3)`` run
    over every combination of versions (versions True); and a benchmark's ``test := TestCase{...}``
    that it first checks passes (one row, "benchmark")."""
    for match in re.finditer(r"func (Test\w+)\(t \*testing.T\) \{\n(.*?)\n\}\n", source, re.S):
        name, body = match.groups()
        table = re.search(r"tests := (map\[string\]TestCase\{.*?\n\t\})\n", body, re.S)
        if not table:
            continue
        parser, converter = _runner(body)
        yield name, parser, converter, table.group(1), False
    for match in re.finditer(r"func test(\w+)\(t \*testing.T, v1, v2, v3 fieldpath.APIVersion\) \{\n(.*?)\n\}\n", source, re.S):
        name, body = match.groups()
        table = re.search(r"tests := (map\[string\]TestCase\{.*?\n\t\})\n", body, re.S)
        parser, converter = _runner(body)
        yield "Test" + name, parser, converter, table.group(1), True
    for match in re.finditer(r"func (Benchmark\w+)\(b \*testing.B\) \{\n\ttest := (TestCase\{.*?\n\t\})\n(.*?)\n\}\n", source, re.S):
        name, table, body = match.groups()
        parser, converter = _runner(body)
        yield name, parser, converter, "map[string]TestCase{\n\"benchmark\": " + table[len("TestCase"):] + ",\n}", False


def extract_parsers(source: str):
    out = {}
    for match in re.finditer(r"(?:var (\w+) =|\t(\w+) :=) func\(\) \*?(?:typed\.)?Parser \{\n\t+\w+, err := typed\.NewParser\(`(.*?)`\)(.*?)\n\t*\}\(\)", source, re.S):
        name, inline, schema, rest = match.groups()
        name = name or inline
        root = re.search(r'parser\.Type\("(\w+)"\)', rest)
        out[name] = {"schema": schema, "type": root.group(1) if root else ""}
    return out


class _Names(dict):
    """The builders, and for a name the tables use but this file does not build (another
    parser), the name itself."""

    def __init__(self, env: dict) -> None:
        super().__init__()
        self.env = env

    def __missing__(self, key: str):
        return self.env.get(key, key)


def main() -> None:
    repo, commit = sys.argv[1], sys.argv[2]
    cases = {"source": f"kubernetes-sigs/structured-merge-diff@{commit} merge/*_test.go", "parsers": {}, "tables": []}
    env = builders()
    for stem in FILES:
        source = subprocess.run(["git", "-C", repo, "show", f"{commit}:merge/{stem}_test.go"], capture_output=True, text=True, check=True).stdout
        source = source.replace("fixture.", "")
        cases["parsers"].update(extract_parsers(source))
        for test, parser, converter, table, versioned in extract_tables(source):
            python = go_to_python(table)
            try:
                if versioned:
                    rows = {}
                    for v1, v2, v3 in itertools.product(("v1", "v2", "v3"), repeat=3):
                        names = _Names({**env, "v1": v1, "v2": v2, "v3": v3})
                        for name, row in eval(python, dict(env), names).items():
                            rows[f"{v1}-{v2}-{v3}/{name}"] = row
                else:
                    rows = eval(python, dict(env), _Names(env))
            except Exception as error:  # noqa: BLE001 - reported in the data
                cases["tables"].append({"file": f"merge/{stem}_test.go", "test": test, "error": f"{type(error).__name__}: {error}"})
                continue
            cases["tables"].append({"file": f"merge/{stem}_test.go", "test": test, "parser": parser, "converter": converter, "rows": rows})
    json.dump(cases, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()

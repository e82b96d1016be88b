"""Transcribes apimachinery's ``pkg/util/managedfields/internal/lastappliedmanager_test.go``
tables (``tests := []testArgs{...}``: lastApplied, original, applied, fieldManager,
expectConflictSet) into ``data/lastapplied_cases.json``, and with ``scale`` its
``pkg/util/managedfields/scalehandler_test.go`` tables into ``data/scalehandler_cases.json``,
every row. Run by hand:

    python tests/api/transcribe_lastapplied.py /path/to/apimachinery COMMIT > tests/api/data/lastapplied_cases.json
    python tests/api/transcribe_lastapplied.py /path/to/apimachinery COMMIT scale > tests/api/data/scalehandler_cases.json
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from transcribe_smd import _Key, _Names, _P, builders, go_to_python  # noqa: E402

PATH = "pkg/util/managedfields/internal/lastappliedmanager_test.go"


SCALE_PATH = "pkg/util/managedfields/scalehandler_test.go"


def scale(repo: str, commit: str) -> None:
    source = subprocess.run(["git", "-C", repo, "show", f"{commit}:{SCALE_PATH}"], capture_output=True, text=True, check=True).stdout
    env = builders()
    env.update({
        "metav1_NewFieldsV1": json.loads, "metav1_ManagedFieldsOperationApply": "Apply", "metav1_ManagedFieldsOperationUpdate": "Update",
        "schema_GroupVersion": lambda **fields: (fields["Group"] + "/" if fields.get("Group") else "") + fields["Version"],
        "fieldpath_MakePathOrDie": _P, "_time": "2013-02-03T00:00:00Z",
    })
    out = {"source": f"kubernetes/apimachinery@{commit} {SCALE_PATH}", "defaultMappings": {"apps/v1": ["f:spec", "f:replicas"]}, "tables": []}
    for match in re.finditer(r"func (Test\w+)\(t \*testing.T\) \{\n(.*?)\n\}\n", source, re.S):
        test, body = match.groups()
        table = re.search(r"tests := (\[\]struct \{.*?\n\t\}\{.*?\n\t\})\n", body, re.S)
        if not table:
            continue
        literal = re.sub(r"^\[\]struct \{.*?\n\t\}", "[]Rows", table.group(1), count=1, flags=re.S)
        literal = literal.replace("&managedFieldTime", "_time").replace("metav1.", "metav1_").replace("schema.GroupVersion{", "schema_GroupVersion{").replace("ResourcePathMappings{", "map[string]Paths{")
        python = go_to_python(literal.replace("schema_GroupVersion{", "TestCase{"))
        python = python.replace("TestCase(**{", "schema_GroupVersion(**{")
        python = re.sub(r"([{,]\s*)([a-z][A-Za-z]*):", r'\1"\2":', python)
        python = re.sub(r"\[\]metav1_ManagedFieldsEntry\[", "[", python)
        rows = eval(python, dict(env), _Names(env))
        out["tables"].append({"test": test, "rows": rows})
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


def main() -> None:
    repo, commit = sys.argv[1], sys.argv[2]
    if sys.argv[3:] == ["scale"]:
        scale(repo, commit)
        return
    source = subprocess.run(["git", "-C", repo, "show", f"{commit}:{PATH}"], capture_output=True, text=True, check=True).stdout
    env = builders()
    env.update({"_bytes": lambda text: text, "fieldpath_KeyByFields": _Key, "fieldpath_MakePathOrDie": _P, "fieldpath_NewSet": lambda *paths: [list(path) for path in paths]})
    out = {"source": f"kubernetes/apimachinery@{commit} {PATH}", "tables": []}
    for match in re.finditer(r"func (Test\w+)\(t \*testing.T\) \{\n\tf := managedfieldstest.NewTestFieldManager\(fakeTypeConverter, schema.FromAPIVersionAndKind\(\"([\w/]+)\", \"(\w+)\"\)\)\n\n\ttests := (\[\]testArgs\{.*?\n\t\})\n", source, re.S):
        test, api_version, kind, table = match.groups()
        python = go_to_python(table.replace("[]byte(", "_bytes(").replace("[]byte{}", '""'))
        python = re.sub(r"([{,]\s*)([a-z][A-Za-z]*):", r'\1"\2":', python)
        rows = eval(python, dict(env), _Names(env))
        out["tables"].append({"test": test, "apiVersion": api_version, "kind": kind, "rows": rows})
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()

"""Transcribes apimachinery's ``pkg/util/managedfields/internal/lastappliedmanager_test.go``
tables (``tests := []testArgs{...}``: lastApplied, original, applied, fieldManager,
expectConflictSet) into ``data/lastapplied_cases.json``, every row. Run by hand:

    python tests/api/transcribe_lastapplied.py /path/to/apimachinery COMMIT > tests/api/data/lastapplied_cases.json
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from transcribe_smd import _Key, _Names, _P, builders, go_to_python  # noqa: E402

PATH = "pkg/util/managedfields/internal/lastappliedmanager_test.go"


def main() -> None:
    repo, commit = sys.argv[1], sys.argv[2]
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

"""Every catalogue experiment served live with no client, then Ctrl-C (issue 33).

For each experiment of the catalogue: ``chaoskube serve NAME --listen 127.0.0.1:0 --out
DIR``; once it serves (the ``export KUBECONFIG`` line), ``--seconds`` of wall time with no
client at all, then SIGINT, as a user's Ctrl-C. What docs/operators.md says should follow:
the run stops where it is, is marked interrupted, and the checkers judge what was observed
-- those that judge the end of a run, and ``differential`` (no fault-free reference can
hold outside programs), are left out with a note; the command exits 130, or 1 when a
checker found a violation in what was observed. A row: the exit code, the phase the
interrupt reached, the verdicts judged (true / false / unknown), the checkers left out, the
failing and unknown ones, and whether anything ended "NOT as expected" for want of a
reference (an unknown verdict that names a reference: must be none). Experiments of
another system than ``kubernetes`` are not served (one line each).

    python3 bench/serve_catalogue.py [--seconds 20] [--only NAME ...] [--out runs/serve-catalogue]

Not a test and not a speed benchmark: it takes about (seconds + 10) x 50 s of wall time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from chaoskube.experiments import registry

ROOT = Path(__file__).resolve().parents[1]


def serve(name: str, seconds: float, out: Path) -> dict:
    directory = out / name
    shutil.rmtree(directory, ignore_errors=True)
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", "serve", name, "--listen", "127.0.0.1:0", "--out", str(directory)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    serving = threading.Event()
    lines: list[str] = []

    def drain() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            lines.append(line)
            if line.startswith("export KUBECONFIG"):
                serving.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    row: dict = {"experiment": name}
    try:
        if not serving.wait(180):
            row["error"] = "never served: " + "".join(lines)[-300:].replace("\n", " ")
            return row
        time.sleep(seconds)
        child.send_signal(signal.SIGINT)
        assert child.stdout is not None
        child.stdout.read()
        row["exit"] = child.wait(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join(10)
    row["wall_s"] = round(time.perf_counter() - started, 1)
    try:
        result = json.loads((directory / "result.json").read_text())
    except (OSError, ValueError) as error:
        row["error"] = f"no result.json: {error}"
        return row
    verdicts = {checker: verdict["valid"] for checker, verdict in result["verdicts"].items()}
    reasons = {checker: verdict["reason"] for checker, verdict in result["verdicts"].items()}
    interrupted = (result.get("live") or {}).get("interrupted") or {}
    row |= {
        "phase": interrupted.get("phase", "-"),
        "expected": result["expected"]["outcome"],
        "true": sum(1 for value in verdicts.values() if value == "true"),
        "false": sorted(checker for checker, value in verdicts.items() if value == "false"),
        "unknown": sorted(checker for checker, value in verdicts.items() if value == "unknown"),
        "left_out": sorted(note.split()[1] for note in result.get("notes", []) if note.startswith("checker ") and (" left out" in note or " not judged" in note)),
        "want_of_reference": sorted(checker for checker, value in verdicts.items() if value == "unknown" and "reference" in reasons[checker]),
        "reasons": {checker: reasons[checker] for checker in verdicts if verdicts[checker] != "true"},
    }
    documented = 1 if row["false"] else 130
    row["as_documented"] = row["exit"] == documented
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/serve-catalogue"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in registry.names():
        if args.only and name not in args.only:
            continue
        experiment = registry.find(name)
        if experiment.system != "kubernetes":
            print(f"{name}: not served (system {experiment.system})", flush=True)
            continue
        row = serve(name, args.seconds, args.out)
        rows.append(row)
        print(json.dumps(row, sort_keys=True), flush=True)
    (args.out / "table.json").write_text(json.dumps(rows, indent=1, sort_keys=True))
    print()
    print("| experiment | exit | as documented | interrupted in | true | false | unknown | left out | for want of a reference |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if "error" in row:
            print(f"| {row['experiment']} | {row.get('exit', '-')} | no | error: {row['error'][:80]} | | | | | |")
            continue
        print(f"| {row['experiment']} | {row['exit']} | {'yes' if row['as_documented'] else 'NO'} | {row['phase']} | {row['true']} | {', '.join(row['false']) or '-'} | "
              f"{', '.join(row['unknown']) or '-'} | {', '.join(row['left_out']) or '-'} | {', '.join(row['want_of_reference']) or 'none'} |")
    served = [row for row in rows if "error" not in row]
    print()
    print(f"{len(rows)} served, {sum(1 for row in served if row['as_documented'])} exited as documented, "
          f"{sum(1 for row in served if row['want_of_reference'])} with a verdict unknown for want of a reference, "
          f"{sum(1 for row in served if row['false'])} with a violation observed, {sum(1 for row in served if row['unknown'])} with an unknown verdict, "
          f"{len(rows) - len(served)} errors")


if __name__ == "__main__":
    main()

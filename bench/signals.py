"""What SIGTERM, SIGINT three times and SIGKILL leave behind, for ``run``, ``explore`` and a
real run: a table of exit codes and leftovers (processes, listening ports, files).

Each command runs in a session of its own (so every process it started can be found); once
it has got going it is sent the signal(s), 0.3 s apart; then, after the command ended and
a grace period for its children (15 s), the table records: the exit code, how long it
took to exit, processes of the session still alive, member ports still listening (real
runs), real-run working directories still on disk (under a TMPDIR of its own), and the
files the command should have written (result.json / summary.json, a journal that ends on
a whole line).

    python3 bench/signals.py [--skip-real]

Real runs need Debian's etcd-server (``etcd`` on PATH or ``$CHAOSKUBE_ETCD``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.signals import kill_session, left_behind, listening_ports, send, start, wait_for  # noqa: E402

SIGNALS = {"SIGTERM": [signal.SIGTERM], "SIGINT x3": [signal.SIGINT] * 3, "SIGKILL": [signal.SIGKILL]}


def whole_journal(path: Path) -> str:
    if not path.exists():
        return "none"
    data = path.read_bytes()
    return "whole" if not data or data.endswith(b"\n") else "cut mid-line"


def one(command: str, label: str, signals: list[int], scratch: Path) -> dict[str, str]:
    out = scratch / "out"
    tmp = scratch / "tmp"
    tmp.mkdir(parents=True)
    argv = {
        "run": ["run", "random-nemesis", "--seed", "1", "--out", str(out)],
        "explore": ["explore", "mesh-partition", "random-nemesis", "--seeds", "1..40", "--jobs", "2", "--out", str(out)],
        "real run": ["run", "real-etcd-pause", "--seed", "1", "--out", str(out)],
    }[command]
    process = start(argv, env={"TMPDIR": str(tmp)})
    ready = {
        "run": lambda: (out / "journal.jsonl").exists() and (out / "journal.jsonl").stat().st_size > 100_000,
        "explore": lambda: out.exists() and any(path.name.startswith("random-nemesis") for path in out.glob("*")),
        "real run": lambda: (out / "journal.jsonl").exists() and b'"name":"faults"' in (out / "journal.jsonl").read_bytes(),
    }[command]
    ports: set[int] = set()
    try:
        wait_for(ready, 120, f"{command} to get going")
        if command == "real run":
            ports = listening_ports() - BEFORE_PORTS
        sent = time.monotonic()
        send(process, signals)
        process.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        leftover = left_behind(process.pid, within_s=15.0)
        kill_session(process.pid)
    time.sleep(2.0)  # the reaper of a real run's data, after SIGKILL
    files = []
    if command == "explore":
        files.append(f"summary.json {'yes' if (out / 'summary.json').exists() else 'no'}")
    else:
        files.append(f"result.json {'yes' if (out / 'result.json').exists() else 'no'}")
        files.append(f"journal {whole_journal(out / 'journal.jsonl')}")
    data_dirs = sorted(tmp.glob("chaoskube-real-etcd-*"))
    return {
        "command": command, "signal": label, "exit": str(process.returncode), "exit after": f"{took:.1f} s",
        "processes left": ", ".join(f"{name} ({pid})" for pid, name in leftover) or "none",
        "ports left": ", ".join(str(port) for port in sorted(ports & listening_ports())) or "none",
        "data dirs left": ", ".join(path.name for path in data_dirs) or "none",
        "files": "; ".join(files),
    }  # fmt: skip


BEFORE_PORTS: set[int] = set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--skip-real", action="store_true")
    options = parser.parse_args()
    global BEFORE_PORTS
    BEFORE_PORTS = listening_ports()
    rows = []
    commands = ["run", "explore"] + ([] if options.skip_real or not shutil.which("etcd") else ["real run"])
    for command in commands:
        for label, signals in SIGNALS.items():
            with tempfile.TemporaryDirectory(prefix="chaoskube-signals-") as scratch:
                rows.append(one(command, label, signals, Path(scratch)))
                print(f"{command:8} {label:9} exit {rows[-1]['exit']:>4}", file=sys.stderr, flush=True)
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(row[column] for column in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

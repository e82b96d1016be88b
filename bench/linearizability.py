# Run: python3 bench/linearizability.py [--seed N] [--repeat 3]  (a minute or two)
"""Benchmark of chaoskube.checkers.linearizability, side by side with porcupine v1.3.0.

Every set is a list of history files that both checkers read (porcupine through the timing
command ``pcheck`` of shared/peers/porcupine, which this script builds with Go when Go is
installed -- ``apt-get install -y golang-go`` -- and says so when it is not):

* Jepsen etcd: the 102 non-empty register logs of shared/peers/jepsen-histories/etcd;
* Jepsen kv: the 6 key-value logs of shared/peers/jepsen-histories/kv;
* generated linearizable register histories of 10,000 and 100,000 operations (10 clients,
  100 keys, about 3 % timed-out operations; one log per key) and of 30,000 on one key,
  drawn from ``random.Random(seed)``;
* broken copies: the 10k and 100k histories with one read of a value never written (the
  case of issue 17), the 10k history with one stale read (a read of a value overwritten
  before it began: no cheap refutation applies), and the kv c50-ok log with one get of a
  value never appended and one stale get.

Per set: the verdicts (checked against the published ones, or linearizable / not as built),
our CPU time with the evidence, our CPU time for the verdicts alone, porcupine's CPU time
for its verdicts (``CheckEventsTimeout``, no evidence), and the ratio; the target is ours,
evidence included, within porcupine's time (ratio <= 1). Both sides are timed alike: each
history on its own, the best of ``--repeat`` runs, and the bests summed (pcheck's way), in
CPU seconds (less disturbed than wall time by other load on a shared machine).
Also printed: the evidence of each broken copy (size, 1-minimal or best so far, seconds)
and the peak memory of the longest single partition (tracemalloc, a separate run).
"""

from __future__ import annotations

import argparse
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chaoskube.checkers.history import UNKNOWN, Op, load_history  # noqa: E402
from chaoskube.checkers.linearizability import (  # noqa: E402
    KVModel,
    RegisterModel,
    _first_violation,  # the search alone, for the breakdown "verdict without evidence"
    _refuted,
    check_linearizability,
)

SHARED = Path(__file__).resolve().parents[2] / "shared"
HISTORIES = SHARED / "peers" / "jepsen-histories"
PORCUPINE = SHARED / "peers" / "porcupine"


def expected_verdicts() -> dict[str, bool]:
    readme = (HISTORIES / "README.md").read_text()
    return {name: verdict == "true"
            for name, verdict in re.findall(r"^\| (\S+) \|.*\| (true|false) \|$", readme, re.M)}


def best_cpu(repeat: int, run: Callable[[], object]) -> float:
    """The least CPU seconds of ``repeat`` runs of ``run()``."""
    best = math.inf
    for _ in range(repeat):
        cpu = time.process_time()
        run()
        best = min(best, time.process_time() - cpu)
    return best


# -- porcupine ------------------------------------------------------------------------------------


def build_porcupine(work: Path) -> Path | None:
    """Build ``pcheck`` from shared/peers/porcupine (offline) into ``work``; None (and a
    line saying why) when Go is not installed or the build fails."""
    go = shutil.which("go")
    if go is None:
        print("porcupine: Go is not installed (apt-get install -y golang-go); porcupine's column is left out")
        return None
    source = work / "porcupine-src"
    shutil.copytree(PORCUPINE, source)
    binary = work / "pcheck"
    build = subprocess.run([go, "build", "-o", str(binary), "."], cwd=source / "pcheck", capture_output=True, text=True,
                           env={"GOPROXY": "off", "GOFLAGS": "-mod=mod", "GOCACHE": str(work / "gocache"), "HOME": str(work), "PATH": "/usr/bin:/bin"})
    if build.returncode != 0:
        print(f"porcupine: the build failed ({build.stderr.strip().splitlines()[-1:]}); porcupine's column is left out")
        return None
    version = subprocess.run([go, "version"], capture_output=True, text=True).stdout.strip()
    print(f"porcupine: v1.3.0 built with {version}")
    return binary


def porcupine_cpu(binary: Path | None, kind: str, files: list[Path], repeat: int) -> tuple[float | None, dict[str, int]]:
    """Porcupine's check CPU seconds over ``files`` (each the best of ``repeat``), and its
    verdict counts."""
    if binary is None:
        return None, {}
    out = subprocess.run([str(binary), "-quiet", "-repeat", str(repeat), kind, *map(str, files)], capture_output=True, text=True, check=True).stdout
    total = re.search(r"check_cpu=([0-9.]+)", out)
    counts = {name: int(number) for name, number in re.findall(r"(Ok|Illegal):(\d+)", out)}
    return (float(total.group(1)) if total else None), counts


# -- histories as files ---------------------------------------------------------------------------


def generate(rng: random.Random, count: int, clients: int = 10, keys: int = 100,
             info_probability: float = 0.03) -> list[Op]:
    """A linearizable register history: each operation takes effect at a point inside its
    interval, and outputs come from applying them in that order. A timed-out operation took
    effect or not (a coin toss); its client then carries on under a fresh process number."""
    clocks = [0.0] * clients
    processes = list(range(clients))
    next_process = clients
    drafts = []
    for number in range(count):
        client = rng.randrange(clients)
        call = clocks[client] + rng.uniform(0.0, 1.0)
        point = call + rng.uniform(0.0, 2.0)
        ret = point + rng.uniform(0.0, 2.0)
        clocks[client] = ret
        roll = rng.random()
        f = "read" if roll < 0.5 else "write" if roll < 0.8 else "cas"
        value = {"read": None, "write": rng.randrange(5),
                 "cas": (rng.randrange(5), rng.randrange(5))}[f]
        info = f != "read" and rng.random() < info_probability
        effect = not info or rng.random() < 0.5
        drafts.append((point, number, processes[client], f, f"k{rng.randrange(keys)}", value,
                       call, ret, info, effect))
        if info:
            processes[client] = next_process
            next_process += 1
    state: dict[str, int | None] = {}
    outputs: dict[int, object] = {}
    for _point, number, _process, f, key, value, _call, _ret, _info, effect in sorted(drafts):
        current = state.get(key)
        if f == "read":
            outputs[number] = current
        elif f == "write":
            if effect:
                state[key] = value
        else:
            outputs[number] = current == value[0]
            if effect and current == value[0]:
                state[key] = value[1]
    drafts.sort(key=lambda draft: (draft[6], draft[1]))
    ops = []
    for index, draft in enumerate(drafts):
        _point, number, process, f, key, value, call, ret, info, _effect = draft
        if info:
            ops.append(Op(index, process, f, key, value, UNKNOWN, "info", call, math.inf))
        else:
            ops.append(Op(index, process, f, key, value, outputs.get(number), "ok", call, ret))
    return ops


def _etcd_value(f: str, value: object) -> str:
    if f == "cas":
        return f"[{value[0]} {value[1]}]"  # type: ignore[index]
    return "nil" if value is None else str(value)


def write_etcd_logs(ops: list[Op], directory: Path, stem: str) -> list[Path]:
    """One Jepsen etcd register log per key (what both checkers can read), events in time
    order: an invocation at ``call``, a completion at ``ret``; an 'info' one at the end."""
    directory.mkdir(parents=True, exist_ok=True)
    by_key: dict[object, list[Op]] = {}
    for op in ops:
        by_key.setdefault(op.key, []).append(op)
    paths = []
    for number, (_key, part) in enumerate(sorted(by_key.items(), key=lambda item: str(item[0]))):
        events = []
        for op in part:
            events.append((op.call, 1, op.index, f"{op.process}\t:invoke\t:{op.f}\t{_etcd_value(op.f, op.value)}"))
            if op.status == "info":
                events.append((math.inf, 0, op.index, f"{op.process}\t:info\t:{op.f}\t:timed-out"))
            elif op.f == "read":
                events.append((op.ret, 0, op.index, f"{op.process}\t:ok\t:read\t{_etcd_value('read', op.output)}"))
            elif op.f == "write":
                events.append((op.ret, 0, op.index, f"{op.process}\t:ok\t:write\t{op.value}"))
            else:
                events.append((op.ret, 0, op.index, f"{op.process}\t:{'ok' if op.output else 'fail'}\t:cas\t{_etcd_value('cas', op.value)}"))
        events.sort()
        path = directory / f"{stem}-{number:03d}.log"
        path.write_text("".join(f"INFO  jepsen.util - {line}\n" for *_, line in events))
        paths.append(path)
    return paths


def never_written(ops: list[Op], value: int = 99) -> list[Op]:
    """``ops`` with the read in the middle made to return ``value``, which nothing writes."""
    reads = [op for op in ops if op.f == "read" and op.status == "ok"]
    target = reads[len(reads) // 2]
    return [replace(op, output=value) if op is target else op for op in ops]


def stale_read(ops: list[Op]) -> list[Op]:
    """``ops`` with one read made stale: it returns the value of a write on its key that
    completed before another write of a different value completed before the read began,
    chosen so that no cheap refutation applies and the key's history is not linearizable."""
    model = RegisterModel()
    reads = [op for op in ops if op.f == "read" and op.status == "ok"]
    for target in reads[len(reads) // 2:]:
        same_key = [op for op in ops if op.key == target.key]
        for write in reversed([op for op in same_key if op.f == "write" and op.status == "ok" and op.ret < target.call]):
            if write.value == target.output:
                continue
            broken = [replace(op, output=write.value) if op is target else op for op in same_key]
            if _refuted(broken, model) is None and check_linearizability(broken, model, time_limit_s=5).valid is False:
                return [replace(op, output=write.value) if op is target else op for op in ops]
    raise SystemExit("no stale read could be made")


def kv_broken(source: Path, directory: Path) -> list[Path]:
    """Two broken copies of a kv log: one get of a value never appended, one stale get (a
    late get returning the output of an early one on the same key)."""
    lines = source.read_text().splitlines(keepends=True)
    gets = [(number, line) for number, line in enumerate(lines) if ":type :ok, :f :get" in line and ':value "' in line]
    number, line = gets[len(gets) // 2]
    never = lines.copy()
    never[number] = re.sub(r':value "([^"]*)"', r':value "\1x 999 999 y"', line)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{source.stem}-never-appended.txt"]
    paths[0].write_text("".join(never))
    model = KVModel()
    for late_number, late in reversed(gets):
        key = re.search(r':key "([^"]*)"', late).group(1)  # type: ignore[union-attr]
        earlier = [line for n, line in gets if n < late_number - 200 and f':key "{key}"' in line]
        if not earlier:
            continue
        early_value = re.search(r':value ("[^"]*")', earlier[0]).group(1)  # type: ignore[union-attr]
        stale = lines.copy()
        stale[late_number] = re.sub(r':value "[^"]*"', f":value {early_value}", late)
        path = directory / f"{source.stem}-stale-get.txt"
        path.write_text("".join(stale))
        ops = load_history(path, "porcupine-kv")
        if _refuted([op for op in ops if op.key == key], model) is None and check_linearizability(ops, model, time_limit_s=10).valid is False:
            paths.append(path)
            break
    return paths


# -- the sets --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    print(f"seed={options.seed} repeat={options.repeat} python={sys.version.split()[0]}")
    print(f"replay: python3 bench/linearizability.py --seed {options.seed} --repeat {options.repeat}")
    expected = expected_verdicts()
    with tempfile.TemporaryDirectory(prefix="chaoskube-lin-") as scratch:
        work = Path(scratch)
        binary = build_porcupine(work)
        ten = generate(random.Random(options.seed), 10_000)
        hundred = generate(random.Random(options.seed), 100_000)
        one_key = generate(random.Random(options.seed), 30_000, keys=1)
        etcd_logs = [path for path in sorted((HISTORIES / "etcd").glob("*.log")) if path.stat().st_size]
        kv_logs = sorted((HISTORIES / "kv").glob("*.txt"))
        broken_kv = kv_broken(HISTORIES / "kv" / "c50-ok.txt", work / "kv-broken")
        sets: list[tuple[str, str, list[Path], dict[str, bool] | bool]] = [
            ("Jepsen etcd (102 logs)", "etcd", etcd_logs, {f"etcd/{p.name}": expected[f"etcd/{p.name}"] for p in etcd_logs} if f"etcd/{etcd_logs[0].name}" in expected else {}),
            ("Jepsen kv (6 logs)", "kv", kv_logs, {f"kv/{p.name}": expected[f"kv/{p.name}"] for p in kv_logs} if f"kv/{kv_logs[0].name}" in expected else {}),
            ("generated 10k, 100 keys", "etcd", write_etcd_logs(ten, work / "g10k", "g10k"), True),
            ("generated 100k, 100 keys", "etcd", write_etcd_logs(hundred, work / "g100k", "g100k"), True),
            ("generated 30k, 1 key", "etcd", write_etcd_logs(one_key, work / "g30k", "g30k"), True),
            ("broken 10k: never-written read", "etcd", write_etcd_logs(never_written(ten), work / "b10k", "b10k"), False),
            ("broken 10k: stale read", "etcd", write_etcd_logs(stale_read(ten), work / "s10k", "s10k"), False),
            ("broken 100k: never-written read", "etcd", write_etcd_logs(never_written(hundred), work / "b100k", "b100k"), False),
            ("broken kv c50-ok: never-appended get", "kv", broken_kv[:1], False),
            ("broken kv c50-ok: stale get", "kv", broken_kv[1:2], False),
        ]
        print()
        print(f"{'set':<38} {'ops':>7} {'verdicts':>18} {'ours s':>8} {'verdict s':>9} {'porcupine s':>11} {'ratio':>6}  within")
        rows = []
        for title, kind, files, want in sets:
            if not files:
                print(f"{title:<38} (no such broken copy could be made)")
                continue
            model = RegisterModel() if kind == "etcd" else KVModel()
            histories = [(path, load_history(path, "jepsen-etcd" if kind == "etcd" else "porcupine-kv")) for path in files]
            operations = sum(len(ops) for _, ops in histories)
            verdicts = {path: check_linearizability(ops, model, time_limit_s=60) for path, ops in histories}
            for path, verdict in verdicts.items():
                wanted = want.get(f"{kind}/{path.name}") if isinstance(want, dict) else want
                if isinstance(want, bool) and want is True and verdict.valid is not True:
                    raise SystemExit(f"{path.name}: expected linearizable, got {verdict.label}: {verdict.reason}")
                if wanted is not None and not isinstance(want, bool) and verdict.valid is not wanted:
                    raise SystemExit(f"{path.name}: expected {wanted}, got {verdict.label}: {verdict.reason}")
            if want is False and not any(verdict.valid is False for verdict in verdicts.values()):
                raise SystemExit(f"{title}: no history was found non-linearizable")
            # Each history timed on its own, best of --repeat, and the bests summed: as pcheck
            # times porcupine (per file, best of -repeat, summed).
            ours = sum(best_cpu(options.repeat, lambda ops=ops, model=model: check_linearizability(ops, model, time_limit_s=60)) for _, ops in histories)
            alone = sum(best_cpu(options.repeat, lambda ops=ops, model=model: _first_violation(model.partition(ops), model, None)) for _, ops in histories)
            theirs, counts = porcupine_cpu(binary, kind, files, options.repeat)
            ok = sum(verdict.valid is True for verdict in verdicts.values())
            counted = f"{ok} ok / {len(verdicts) - ok} not"
            if counts and (counts.get("Ok", 0), counts.get("Illegal", 0)) != (ok, len(verdicts) - ok):
                counted += f" (porcupine: {counts})"
            ratio = ours / theirs if theirs else math.nan
            within = "n/a" if theirs is None else ("yes" if ours <= theirs else "NO")
            print(f"{title:<38} {operations:>7} {counted:>18} {ours:8.3f} {alone:9.3f} {'' if theirs is None else f'{theirs:.3f}':>11} {ratio:6.2f}  {within}")
            rows.append((title, verdicts))
        print()
        for title, verdicts in rows:
            if not title.startswith("broken"):
                continue
            for path, verdict in verdicts.items():
                if verdict.valid is False:
                    details = verdict.details
                    print(f"evidence, {title}: {len(verdict.evidence)} operation(s), {details['evidence_status']}, "
                          f"{details['evidence_context_ops']} context ops, verdict {details['verdict_seconds']:.3f} s + evidence {details['evidence_seconds']:.3f} s ({path.name})")
        tracemalloc.start()
        check_linearizability(one_key, RegisterModel(), time_limit_s=None)
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"peak memory of the 30k single-key check: {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()

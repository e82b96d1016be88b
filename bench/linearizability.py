# Run: python3 bench/linearizability.py [--seed N] [--repeat 3]  (about a minute)
"""Benchmark of chaoskube.checkers.linearizability.

Prints, each the best of ``--repeat`` runs (wall time, and CPU time of this process, which is
less disturbed by other load on the machine):

* the total check time over the 102 non-empty Jepsen etcd histories and the 6 porcupine
  key-value histories (shared/peers/jepsen-histories), verdicts checked against the README;
* generated linearizable register histories of 10,000 and 100,000 operations (10 concurrent
  clients, 100 keys, about 3% timed-out operations), and of 30,000 on a single key, drawn from
  ``random.Random(seed)``, with check time and the peak memory of the check (tracemalloc, in a
  separate run).

Times include building the evidence for the non-linearizable histories; a second figure gives
the verdicts alone.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chaoskube.checkers.history import UNKNOWN, Op, load_history  # noqa: E402
from chaoskube.checkers.linearizability import (  # noqa: E402
    KVModel,
    RegisterModel,
    _first_violation,  # the search alone, for the breakdown "verdict without evidence"
    check_linearizability,
)

HISTORIES = Path(__file__).resolve().parents[2] / "shared" / "peers" / "jepsen-histories"


def expected_verdicts() -> dict[str, bool]:
    readme = (HISTORIES / "README.md").read_text()
    return {name: verdict == "true"
            for name, verdict in re.findall(r"^\| (\S+) \|.*\| (true|false) \|$", readme, re.M)}


def best_of(repeat: int, run) -> tuple[float, float]:
    """(wall seconds, CPU seconds), each the minimum over ``repeat`` runs of ``run()``."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def check_files(histories: list[tuple[str, list[Op]]], model, expected: dict[str, bool]) -> None:
    for name, ops in histories:
        verdict = check_linearizability(ops, model, time_limit_s=60)
        if verdict.valid is not expected[name]:
            raise SystemExit(f"{name}: expected {expected[name]}, got {verdict.label}: "
                             f"{verdict.reason}")


def verdicts_only(histories: list[tuple[str, list[Op]]], model) -> None:
    for _name, ops in histories:
        _first_violation(model.partition(ops), model, None)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    print(f"seed={options.seed} repeat={options.repeat} python={sys.version.split()[0]}")
    print(f"replay: python3 bench/linearizability.py --seed {options.seed} "
          f"--repeat {options.repeat}")
    expected = expected_verdicts()

    etcd = [(f"etcd/{path.name}", load_history(path, "jepsen-etcd"))
            for path in sorted((HISTORIES / "etcd").glob("*.log"))]
    etcd = [(name, ops) for name, ops in etcd if ops]
    operations = sum(len(ops) for _name, ops in etcd)
    wall, cpu = best_of(options.repeat,
                        lambda: check_files(etcd, RegisterModel(), expected))
    print(f"etcd: {len(etcd)} histories, {operations} ops: {wall:.3f} s wall, {cpu:.3f} s CPU "
          f"(best of {options.repeat}; verdicts as published)")
    wall, cpu = best_of(options.repeat, lambda: verdicts_only(etcd, RegisterModel()))
    print(f"  of which the verdicts alone (no evidence): {wall:.3f} s wall, {cpu:.3f} s CPU")
    for name, ops in etcd:
        single_wall, _ = best_of(1, lambda ops=ops: check_linearizability(ops, RegisterModel()))
        if single_wall > 0.1:
            print(f"  slowest: {name} {single_wall:.3f} s")

    kv = [(f"kv/{path.name}", load_history(path, "porcupine-kv"))
          for path in sorted((HISTORIES / "kv").glob("*.txt"))]
    wall, cpu = best_of(options.repeat, lambda: check_files(kv, KVModel(), expected))
    print(f"kv: {len(kv)} histories, {sum(len(ops) for _n, ops in kv)} ops: {wall:.3f} s wall, "
          f"{cpu:.3f} s CPU (best of {options.repeat}; verdicts as published)")
    wall, cpu = best_of(options.repeat, lambda: verdicts_only(kv, KVModel()))
    print(f"  of which the verdicts alone (no evidence): {wall:.3f} s wall, {cpu:.3f} s CPU")
    for name, ops in kv:
        started = time.perf_counter()
        verdict = check_linearizability(ops, KVModel(), time_limit_s=60)
        print(f"  {name}: {verdict.label}, {time.perf_counter() - started:.3f} s "
              f"({len(verdict.evidence)} evidence ops)")

    # The last is the worst case for memory: one long partition (see _SEARCH_BYTES_MAX).
    for count, keys in ((10_000, 100), (100_000, 100), (30_000, 1)):
        ops = generate(random.Random(options.seed), count, keys=keys)
        info = sum(op.status == "info" for op in ops)
        verdicts = []
        wall, cpu = best_of(options.repeat, lambda ops=ops: verdicts.append(
            check_linearizability(ops, RegisterModel(), time_limit_s=None)))
        if any(verdict.valid is not True for verdict in verdicts):
            raise SystemExit(f"generated history of {count} ops: {verdicts[-1].reason}")
        tracemalloc.start()
        check_linearizability(ops, RegisterModel(), time_limit_s=None)
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"generated: {count} ops ({info} info, {keys} keys): "
              f"{wall:.3f} s wall, {cpu:.3f} s CPU (best of {options.repeat}), "
              f"peak {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()

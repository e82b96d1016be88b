"""What event triggers cost ``World.record`` (faults/triggers.py), as ratios measured in one run.

``World.record`` is the hottest call of a run (every send, delivery and component event).
It writes N ``send`` events (the runtime's most frequent) to an in-memory journal:

- baseline: no trigger armed (one test of an empty dict per event);
- armed-other-type: a trigger armed on ``raft-role`` (one dict lookup per event);
- armed-same-type: a trigger armed on ``send`` whose field never matches (the pure
  ``triggers.matches`` per event, the selector never resolved);
- armed-same-type-selector: the same with ``process: leader:etcd`` and a matching kind, so
  the selector is resolved for every event (the worst case: a trigger on the commonest
  event whose plain fields all match).

    python3 bench/triggers.py [--events 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time

from chaoskube.faults import triggers
from chaoskube.faults.triggers import When
from chaoskube.sim import Journal, World


def measure(events: int, when: When | None) -> float:
    world = World(1, journal=Journal(None))
    if when is not None:
        world.on_record(when.type, lambda event: triggers.matches(when, event, lambda selector, argument: ("etcd-9",)))
    record = world.record
    started = time.perf_counter()
    for index in range(events):
        record("send", id=index, src="etcd-1", dst="etcd-2", port="raft", kind="APP")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cases = {
        "baseline (nothing armed)": None,
        "armed-other-type": When(type="raft-role"),
        "armed-same-type": When(type="send", fields={"kind": "HEARTBEAT"}),
        "armed-same-type-selector": When(type="send", process="leader:etcd", fields={"kind": "APP"}),
    }
    measure(args.events // 10, None)  # warm up
    results = {name: float("inf") for name in cases}
    for _ in range(args.rounds):  # interleaved, so a busy machine slows every case alike
        for name, when in cases.items():
            results[name] = min(results[name], measure(args.events, when))
    base = results["baseline (nothing armed)"]
    print(f"World.record x {args.events:,} send events (best of {args.rounds} interleaved rounds)")
    for name, seconds in results.items():
        print(f"  {name:28s} {seconds / args.events * 1e9:8.0f} ns/event  {seconds / base:5.2f}x baseline")


if __name__ == "__main__":
    main()

"""Runtime benchmark: 1,000 simulated processes x 100 timed steps.

Each process repeats 100 times: sleep a seeded random delay, then send a message to a
seeded random peer; every process also receives what it is sent. Events = sleeps +
deliveries. The same events also run through a plain heapq loop (no Trio, no processes),
measured in the same run; the ratio is the runtime's efficiency.

    python3 bench/runtime.py [--processes 1000] [--steps 100] [--seed 1]
"""

from __future__ import annotations

import argparse
import heapq
import random
import time

from chaoskube.sim import Journal, World


def run_world(processes: int, steps: int, seed: int) -> tuple[int, float, str]:
    names = [f"p{i}" for i in range(processes)]
    received = [0]

    async def node(process):
        rng = process.random()
        process.start_soon(receiver, process)
        for _ in range(steps):
            await process.sleep(rng.expovariate(10.0))
            process.send(rng.choice(names), "hello")

    async def receiver(process):
        while True:
            await process.receive()
            received[0] += 1

    async def main(world):
        for name in names:
            world.spawn(name, node)
        await world.sleep(steps * 1.0)  # every process is done long before
        return world.events_run

    world = World(seed, journal=Journal(None))
    started = time.perf_counter()
    events = world.run(main)
    elapsed = time.perf_counter() - started
    assert received[0] == processes * steps, received
    return events, elapsed, world.fingerprint


def run_heapq(processes: int, steps: int, seed: int) -> tuple[int, float]:
    """The same workload as bare events: (time, seq, kind, process)."""
    started = time.perf_counter()
    rngs = [random.Random(seed * 1_000_003 + i) for i in range(processes)]
    net = random.Random(seed)
    heap: list[tuple[float, int, int, int]] = []
    sequence = 0
    remaining = [steps] * processes
    for i, rng in enumerate(rngs):
        sequence += 1
        heapq.heappush(heap, (rng.expovariate(10.0), sequence, 0, i))
    events = received = 0
    while heap:
        now, _, kind, i = heapq.heappop(heap)
        events += 1
        if kind == 0:  # wake-up: send, then sleep again
            rng = rngs[i]
            sequence += 1
            heapq.heappush(heap, (now + 0.0005 + net.random() * 0.0005, sequence, 1, rng.randrange(processes)))
            remaining[i] -= 1
            if remaining[i]:
                sequence += 1
                heapq.heappush(heap, (now + rng.expovariate(10.0), sequence, 0, i))
        else:
            received += 1
    elapsed = time.perf_counter() - started
    assert received == processes * steps
    return events, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"runtime benchmark: {args.processes} processes x {args.steps} steps, seed {args.seed}")
    events, elapsed, fingerprint = run_world(args.processes, args.steps, args.seed)
    base_events, base_elapsed = run_heapq(args.processes, args.steps, args.seed)
    ours = events / elapsed
    base = base_events / base_elapsed
    print(f"  chaoskube.sim : {events:>9,} events in {elapsed:6.2f} s = {ours:>11,.0f} events/s  (journal {fingerprint[:12]})")
    print(f"  heapq loop    : {base_events:>9,} events in {base_elapsed:6.2f} s = {base:>11,.0f} events/s")
    print(f"  ratio         : {100 * ours / base:.2f} % of the heapq loop (target >= 3 %, stretch 5 %)")


if __name__ == "__main__":
    main()

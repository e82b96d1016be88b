"""The random tree: independent, named, seeded generators.

``derive_seed(seed, name)`` hashes the run seed and a stable name with SHA-256 (never the
salted built-in ``hash``), so a generator's stream depends only on (seed, name): adding a
new consumer of randomness does not shift anyone else's stream.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, name: str) -> int:
    digest = hashlib.sha256(f"chaoskube\x00{seed}\x00{name}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


class RandomTree:
    """``tree(name)`` returns the same ``random.Random`` for the same name, every time."""

    __slots__ = ("seed", "_generators")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._generators: dict[str, random.Random] = {}

    def __call__(self, name: str) -> random.Random:
        generator = self._generators.get(name)
        if generator is None:
            generator = random.Random(derive_seed(self.seed, name))
            self._generators[name] = generator
        return generator

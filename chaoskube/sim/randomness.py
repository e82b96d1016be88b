"""The random tree: independent, named, seeded generators.

``derive_seed(seed, name)`` hashes the run seed and a stable name with SHA-256 (never the
salted built-in ``hash``), so a generator's stream depends only on (seed, name): adding a
new consumer of randomness does not shift anyone else's stream.

A tree can be *reseeded* once its first stage is over (:meth:`RandomTree.reseed`): the
boot of an experiment draws from the boot seed, everything after from the run seed
(docs/campaigns.md, "Boot seed and run seed"). Every generator handed out so far is
re-seeded in place, so a component that kept its generator draws from the new stream
without knowing; generators asked for later come from the new seed too.
"""

from __future__ import annotations

import hashlib
import random

#: The largest run seed. The journal records the seed as a JSON integer, and orjson writes
#: integers up to 2**64 - 1 (an unsigned 64-bit integer); a larger seed could be drawn from
#: (SHA-256 takes any integer) but not recorded, so runs take seeds 0 .. 2**64 - 1.
MAX_SEED = 2**64 - 1


def seed_error(seed: object) -> str | None:
    """Why ``seed`` is not a run seed (one line), or None when it is one."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        return f"a seed is an integer, not {seed!r}"
    if not 0 <= seed <= MAX_SEED:
        return f"a seed is between 0 and 2**64 - 1 ({MAX_SEED}), not {seed}"
    return None


def derive_seed(seed: int, name: str) -> int:
    digest = hashlib.sha256(f"chaoskube\x00{seed}\x00{name}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


class RandomTree:
    """``tree(name)`` returns the same ``random.Random`` for the same name, every time."""

    __slots__ = ("seed", "stage", "_generators")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.stage = ""  # "" for the first stage; "run" after reseed(seed, "run")
        self._generators: dict[str, random.Random] = {}

    def _derive(self, name: str) -> int:
        # The first stage keeps the plain derivation (a tree never reseeded draws exactly
        # what it always drew); a later stage hashes its name in, so a run seed equal to
        # the boot seed does not replay the boot's draws (lease ids, uids) a second time.
        return derive_seed(self.seed, f"{self.stage}/{name}" if self.stage else name)

    def __call__(self, name: str) -> random.Random:
        generator = self._generators.get(name)
        if generator is None:
            generator = random.Random(self._derive(name))
            self._generators[name] = generator
        return generator

    def reseed(self, seed: int, stage: str) -> None:
        """Start stage ``stage`` (not the current one) with ``seed``: every generator
        handed out so far is re-seeded in place from (seed, stage, name), in name order."""
        assert stage and stage != self.stage, f"stage {stage!r} after {self.stage!r}"
        self.seed, self.stage = seed, stage
        for name in sorted(self._generators):
            self._generators[name].seed(self._derive(name))

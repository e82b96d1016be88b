"""Partitions planned as grudges (Jepsen's term, jepsen/src/jepsen/nemesis.clj).

A grudge maps each destination to the set of sources whose messages it drops. These are
pure functions of node names (and, where a random choice is needed, a generator passed in);
the runtime applies a grudge with ``world.network.partition(grudge)`` and heals with
``world.network.heal()``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

Grudge = dict[str, frozenset[str]]


def complete(components: Iterable[Iterable[str]]) -> Grudge:
    """Every component drops every node outside it (Jepsen's ``complete-grudge``)."""
    groups = [sorted(set(component)) for component in components]
    everyone = sorted({node for group in groups for node in group})
    grudge: Grudge = {}
    for group in groups:
        others = frozenset(everyone) - frozenset(group)
        for node in group:
            if others:
                grudge[node] = others
    return dict(sorted(grudge.items()))


def isolate(node: str, everyone: Iterable[str]) -> Grudge:
    """Cut one node off from everyone else, both ways."""
    rest = sorted(set(everyone) - {node})
    return complete([[node], rest])


def one_way(sources: Iterable[str], destinations: Iterable[str]) -> Grudge:
    """Destinations drop what sources send; the other direction still works."""
    dropped = frozenset(sources)
    return {destination: dropped for destination in sorted(set(destinations)) if dropped}


def bridge(nodes: Sequence[str]) -> Grudge:
    """Two halves that share one node (Jepsen's ``bridge``): with nodes sorted, the middle
    one sees both sides; each side drops the other side but not the bridge."""
    ordered = sorted(nodes)
    assert len(ordered) >= 3, "a bridge needs at least three nodes"
    middle = len(ordered) // 2
    left, right = ordered[:middle], ordered[middle + 1 :]
    grudge: Grudge = {}
    for node in left:
        grudge[node] = frozenset(right)
    for node in right:
        grudge[node] = frozenset(left)
    return dict(sorted(grudge.items()))


def bridge_node(nodes: Sequence[str]) -> str:
    ordered = sorted(nodes)
    return ordered[len(ordered) // 2]


def minority_majority(
    nodes: Sequence[str],
    rng: random.Random,
    *,
    include: str | None = None,
    exclude: str | None = None,
) -> tuple[list[str], list[str]]:
    """Split into a minority (floor((n-1)/2) nodes) and a majority, chosen with ``rng``.
    ``include`` forces a node into the minority (e.g. the current leader); ``exclude``
    keeps one out of it."""
    ordered = sorted(nodes)
    size = (len(ordered) - 1) // 2
    assert size >= 1, "a minority needs at least three nodes"
    pool = [node for node in ordered if node not in (include, exclude)]
    rng.shuffle(pool)
    chosen = ([include] if include is not None else []) + pool
    minority = sorted(chosen[:size])
    majority = sorted(set(ordered) - set(minority))
    return minority, majority


def healthy(grudge: Grudge, src: str, dst: str) -> bool:
    return src not in grudge.get(dst, frozenset())

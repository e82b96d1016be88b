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


# -- Jepsen's partition specs (jepsen/src/jepsen/nemesis/combined.clj ``grudge``) ----------
#
# Transcribed from jepsen-io/jepsen (jepsen/src/jepsen/nemesis.clj, util.clj,
# nemesis/combined.clj at c4c7473d). Jepsen draws with its own ``rand``; here every random
# choice comes from the generator passed in, over the nodes sorted first, so a seed gives
# one grudge.

#: Jepsen's partition specs (combined.clj ``partition-specs``; ``primaries`` needs a system
#: that can name its primaries, here the leader of the role group).
PARTITION_SPECS = ("one", "majority", "majorities-ring", "minority-third", "primaries")


def majority(count: int) -> int:
    """The smallest integer strictly greater than half (util.clj ``majority``)."""
    return count // 2 + 1


def minority_third(count: int) -> int:
    """The largest integer strictly less than a third (util.clj ``minority-third``):
    0 for 1..3 nodes, 1 for 4..6, 2 for 7..9."""
    return max(0, (count - 1) // 3)


def bisect(nodes: Sequence[str]) -> tuple[list[str], list[str]]:
    """Cut in half, the smaller half first (nemesis.clj ``bisect``)."""
    ordered = list(nodes)
    return ordered[: len(ordered) // 2], ordered[len(ordered) // 2 :]


def split_one(nodes: Sequence[str], rng: random.Random) -> tuple[list[str], list[str]]:
    """One random node on its own, the rest together (nemesis.clj ``split-one``)."""
    ordered = sorted(nodes)
    loner = rng.choice(ordered)
    return [loner], [node for node in ordered if node != loner]


def invert(nodes: Iterable[str], connections: dict[str, set[str]]) -> Grudge:
    """From whom each node may hear to whom it drops (nemesis.clj ``invert-grudge``);
    nodes that drop nobody are left out, as :func:`complete` leaves them."""
    everyone = frozenset(nodes)
    grudge = {node: everyone - connections.get(node, set()) for node in sorted(everyone)}
    return {node: dropped for node, dropped in grudge.items() if dropped}


def majorities_ring_perfect(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Nodes shuffled into a ring; each sees the majority-sized window of the ring centred
    on it, so every node sees a majority and no two see the same one
    (nemesis.clj ``majorities-ring-perfect``, for up to five nodes)."""
    ring = sorted(nodes)
    rng.shuffle(ring)
    count, size = len(ring), majority(len(ring))
    everyone = frozenset(ring)
    grudge: Grudge = {}
    for start in range(count):
        window = [ring[(start + offset) % count] for offset in range(size)]
        grudge[window[size // 2]] = everyone - frozenset(window)
    return {node: dropped for node, dropped in sorted(grudge.items()) if dropped}


def majorities_ring_stochastic(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Links the least-connected node to another least-connected node it does not see yet,
    until every node sees a majority (itself included), then inverts the links into a
    grudge (nemesis.clj ``majorities-ring-stochastic``, for more than five nodes)."""
    ordered = sorted(nodes)
    size = majority(len(ordered))
    connections = {node: {node} for node in ordered}
    by_degree: dict[int, set[str]] = {1: set(ordered)}
    while True:
        ranked = []
        for degree in sorted(by_degree):
            shuffled = sorted(by_degree[degree])
            rng.shuffle(shuffled)
            ranked += [(degree, node) for node in shuffled]
        a_degree, a = ranked[0]
        if a_degree >= size:
            return invert(ordered, connections)
        b_degree, b = next((degree, node) for degree, node in ranked if node not in connections[a])
        connections[a].add(b)
        connections[b].add(a)
        by_degree[a_degree].discard(a)
        by_degree[b_degree].discard(b)
        by_degree.setdefault(a_degree + 1, set()).add(a)
        by_degree.setdefault(b_degree + 1, set()).add(b)


def majorities_ring(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Every node sees a majority, but no node sees the same majority as another
    (nemesis.clj ``majorities-ring``): the exact ring up to five nodes, else the
    stochastic construction."""
    assert len(nodes) >= 3, "a majorities ring needs at least three nodes"
    return majorities_ring_perfect(nodes, rng) if len(nodes) <= 5 else majorities_ring_stochastic(nodes, rng)


def primaries_grudge(nodes: Sequence[str], primaries: Sequence[str], rng: random.Random) -> Grudge:
    """A random non-empty subset of the primaries, each alone in its own component, the
    other nodes together (combined.clj ``grudge`` ``:primaries``). No primary: no grudge."""
    present = [node for node in sorted(set(primaries)) if node in set(nodes)]
    if not present:
        return {}
    chosen = nonempty_subset(present, rng)
    others = [node for node in sorted(nodes) if node not in set(present)]
    return complete([others, *([node] for node in chosen)]) if others or len(chosen) > 1 else {}


def nonempty_subset(nodes: Sequence[str], rng: random.Random) -> list[str]:
    """A random non-empty subset (jepsen.random ``nonempty-subset``: a shuffle, then a
    prefix of uniform length 1..n), sorted."""
    shuffled = sorted(nodes)
    assert shuffled, "a non-empty subset of nothing"
    rng.shuffle(shuffled)
    return sorted(shuffled[: rng.randint(1, len(shuffled))])


def partition_spec(spec: str, nodes: Sequence[str], rng: random.Random, primaries: Sequence[str] = ()) -> Grudge:
    """The grudge of one of Jepsen's partition specs (:data:`PARTITION_SPECS`) over
    ``nodes`` (combined.clj ``grudge``):

    - ``one`` — one random node isolated;
    - ``majority`` — a clean split, the nodes shuffled then bisected (smaller half first);
    - ``majorities-ring`` — overlapping majorities (:func:`majorities_ring`);
    - ``minority-third`` — fewer than a third of the nodes (shuffled) cut off from the
      rest: no grudge on three nodes or fewer, where that is nobody;
    - ``primaries`` — a non-empty subset of ``primaries`` each isolated alone."""
    ordered = sorted(nodes)
    if spec == "one":
        return complete(split_one(ordered, rng))
    if spec == "majority":
        rng.shuffle(ordered)
        return complete(bisect(ordered))
    if spec == "majorities-ring":
        return majorities_ring(ordered, rng)
    if spec == "minority-third":
        rng.shuffle(ordered)
        cut = minority_third(len(ordered))
        return complete([ordered[:cut], ordered[cut:]]) if cut else {}
    assert spec == "primaries", f"unknown partition spec {spec!r}"
    return primaries_grudge(ordered, primaries, rng)

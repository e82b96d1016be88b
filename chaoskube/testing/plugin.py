"""pytest plugin for chaoskube (entry point ``pytest11: chaoskube``).

Fixtures:

- ``sim_world`` — a fresh :class:`~chaoskube.sim.World` per test, seeded by
  ``@pytest.mark.sim_seed(N)`` (default :data:`DEFAULT_SEED`).
- ``cluster`` — a :class:`~chaoskube.testing.LiveCluster` on ``sim_world``: the cluster of
  ``@pytest.mark.cluster_spec(...)`` (a ``ClusterSpec``, or its keyword arguments; default
  :func:`~chaoskube.testing.small_cluster_spec`) booted with every node Ready, running in a
  background thread. Act on it with ``cluster.run(async_fn, *args)`` (virtual time moves
  only inside ``run``) and look through ``cluster.cluster``, ``cluster.client`` and
  ``cluster.world``. A World runs its own ``trio.run``, so use it from a plain (sync) test,
  not from a pytest-trio async test. Stopped at teardown.
- ``journal`` — ``sim_world.journal``.

On failure the report gets a ``chaoskube`` section with the seed, the step list and the
journal fingerprint: from a :class:`~chaoskube.testing.ClusterMachine` failure (the
exception's ``chaoskube_run``) or, for tests using the fixtures, from the live cluster.

Non-guarantees: the fingerprint printed for a fixture-based test is the journal's at the
moment the report is made (the run is stopped at fixture teardown, after the call report).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chaoskube.cluster import ClusterSpec
from chaoskube.sim import World
from chaoskube.testing.machine import LiveCluster, RunSummary, small_cluster_spec

DEFAULT_SEED = 1
SECTION = "chaoskube"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sim_seed(seed): the seed of the sim_world fixture (chaoskube)")
    config.addinivalue_line("markers", "cluster_spec(spec=None, **fields): the ClusterSpec of the cluster fixture (chaoskube)")


def _seed_of(request: pytest.FixtureRequest) -> int:
    marker = request.node.get_closest_marker("sim_seed")
    if marker is None:
        return DEFAULT_SEED
    assert len(marker.args) == 1 and not marker.kwargs, "use @pytest.mark.sim_seed(N)"
    return int(marker.args[0])


def _spec_of(request: pytest.FixtureRequest) -> ClusterSpec:
    marker = request.node.get_closest_marker("cluster_spec")
    if marker is None:
        return small_cluster_spec()
    if marker.args:
        assert len(marker.args) == 1 and isinstance(marker.args[0], ClusterSpec) and not marker.kwargs, "cluster_spec takes one ClusterSpec or keyword fields"
        return marker.args[0]
    return ClusterSpec(**marker.kwargs)


@pytest.fixture
def sim_world(request: pytest.FixtureRequest) -> World:
    return World(_seed_of(request))


@pytest.fixture
def cluster(request: pytest.FixtureRequest, sim_world: World) -> Iterator[LiveCluster]:
    live = LiveCluster(sim_world, _spec_of(request))
    request.node.stash[_LIVE] = live
    live.open()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def journal(sim_world: World) -> Any:
    return sim_world.journal


_LIVE = pytest.StashKey[LiveCluster]()


def _summary_of(error: BaseException | None, depth: int = 0) -> RunSummary | None:
    """The first RunSummary attached to ``error`` or, in a group, to one of its members."""
    if error is None or depth > 8:
        return None
    summary = getattr(error, "chaoskube_run", None)
    if isinstance(summary, RunSummary):
        return summary
    for member in getattr(error, "exceptions", ()):
        found = _summary_of(member, depth + 1)
        if found is not None:
            return found
    return _summary_of(error.__cause__ or error.__context__, depth + 1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    summary = _summary_of(call.excinfo.value if call.excinfo is not None else None)
    if summary is None:
        live = item.stash.get(_LIVE, None)
        if live is not None:
            summary = live.summary()
        elif "sim_world" in getattr(item, "funcargs", {}):
            world = item.funcargs["sim_world"]
            summary = RunSummary(world.seed, (), world.fingerprint, world.now, world.journal.count)
    if summary is not None:
        report.sections.append((SECTION, summary.describe()))

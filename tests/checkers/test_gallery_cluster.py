"""The gallery of deliberately broken control-plane components: each runs in a whole
simulated cluster, and a checker must catch it — while the same story with the real
component passes (so the checkers are not simply failing everything)."""

import pytest
import trio

from chaoskube.checkers import check_leader_election, check_scheduling
from chaoskube.client import leaderelection
from chaoskube.cluster import ClusterSpec, NodeGroup, Taint
from chaoskube.scheduler import plugins
from chaoskube.scheduler.framework import Status
from tests.cluster.harness import deployment, pods_of, ready_count, run_cluster


async def _ready(client, app, count):
    return await ready_count(client, app) == count


def _taint_story():
    async def story(world, cluster, client):
        await client.create(deployment("web", 6))
        await cluster.wait_for(lambda: _ready(client, "web", 6), within_s=120)
        return sorted(pod.spec.node_name for pod in await pods_of(client, "web"))

    spec = ClusterSpec(controller_managers=1, schedulers=1, node_groups=[
        NodeGroup(prefix="plain", count=1, zones=["zone-a"]),
        NodeGroup(prefix="infra", count=2, zones=["zone-a"], taints=[Taint(key="dedicated", value="infra", effect="NoSchedule")]),
    ])
    return story, spec


def test_a_scheduler_that_ignores_taints_is_caught_by_the_scheduling_checker(monkeypatch):
    story, spec = _taint_story()
    world, nodes = run_cluster(story, spec)
    assert set(nodes) == {"plain-1"}
    assert check_scheduling(world.journal.events).valid is True

    monkeypatch.setattr(plugins.TaintToleration, "filter", lambda self, state, pod, node_info: Status())
    world, nodes = run_cluster(story, spec)
    assert any(node.startswith("infra") for node in nodes), "the broken scheduler used tainted nodes"
    verdict = check_scheduling(world.journal.events)
    assert verdict.valid is False and "taint" in verdict.reason.lower(), verdict.reason
    assert verdict.evidence


def _election_story():
    async def story(world, cluster, client):
        await world.sleep(60)
        return cluster.leader("kube-controller-manager")

    return story, ClusterSpec(controller_managers=3, schedulers=1, node_groups=[NodeGroup(count=1, zones=["zone-a"])])


def test_a_leader_election_that_never_checks_expiry_is_caught_by_the_leader_election_checker(monkeypatch):
    story, spec = _election_story()
    world, _ = run_cluster(story, spec)
    assert check_leader_election(world.journal.events).valid is True

    # Broken: every lease held by someone else counts as expired, so candidates take it over.
    monkeypatch.setattr(leaderelection.Observation, "lease_valid", lambda self, now, config: False)
    world, _ = run_cluster(story, spec)
    verdict = check_leader_election(world.journal.events)
    assert verdict.valid is False and "both acted as leader" in verdict.reason, verdict.reason

"""Issue 32: a ClusterMachine on the user's own manifests (``manifests``), its workload rules
acting in the namespaces of that workload rather than in ``default`` only."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from chaoskube.testing import ClusterMachine, focus


class ShopMachine(ClusterMachine):
    """The manifests (a Namespace and a Deployment ``shop/web`` whose pods are labelled
    ``app.kubernetes.io/name=shop-web``), relative to this file."""

    manifests = "manifests/shop-web.yaml"


def outcomes(machine: ClusterMachine) -> list[tuple[str, int | None]]:
    return [(event["op"], event["code"]) for event in machine.world.journal.events if event.get("type") == "hypothesis-outcome"]


def test_the_manifests_are_created_at_boot_and_the_rules_act_in_their_namespace():
    assert ShopMachine.workload_namespaces() == ("shop",)
    assert ClusterMachine.workload_namespaces() == ("default",)
    machine = ShopMachine()
    assert machine.deployment_choices() == ["shop/web", "shop/api", "shop/db"]
    assert ClusterMachine().deployment_choices() == ["web", "api", "db"]  # as before: the draws of existing machines are unchanged
    try:
        bundle = machine.boot(seed=1)
        assert list(bundle.values) == ["shop/web"]  # the manifests' Deployment joins the bundle
        assert ("create Namespace shop", 200) in outcomes(machine) and ("create Deployment shop/web", 200) in outcomes(machine)
        machine.wait(seconds=15.0)
        machine.scale_deployment(name="shop/web", replicas=3)
        machine.evict_pod(name="shop/web", index=0)
        machine.create_deployment(name="shop/api", replicas=1)
        machine.create_pdb(name="shop/web", max_unavailable=1)
        done = dict(outcomes(machine))
        assert done["scale deployment shop/web"] == 200
        evicted = [op for op in done if op.startswith("evict pod shop/web-")]
        assert evicted and done[evicted[0]] == 200, done  # found by the manifests' own labels, not app=web
        assert done["create deployment shop/api"] == 200 and done["create pdb shop/web"] == 200
        machine._check_all_invariants()
    finally:
        machine.teardown()


NAMED: set[str] = set()


class ShopStory(ShopMachine):
    @invariant()
    def remember_names(self) -> None:
        if self.live is not None:
            NAMED.update(args["name"] for step, args in self.live.steps if step in ("create_deployment", "scale_deployment"))


def test_hypothesis_draws_the_manifests_deployments_and_namespaced_names():
    Story = focus(ShopStory, "ShopStoryFocused", rules=["create_deployment", "scale_deployment"], invariants=["remember_names"], liveness=False)
    NAMED.clear()
    run_state_machine_as_test(Story, settings=settings(max_examples=3, stateful_step_count=4, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)))
    assert NAMED and all(name.startswith("shop/") for name in NAMED), NAMED

"""ClusterMachine as a controller author uses it: ``@eventually`` properties judged after the
heal, ``start_processes`` for the author's own processes, rule weights that leave the
workload room (a deliberately wrong invariant fails within the default example budget),
shrinking bounded in time, ``liveness`` off for safety searches, and the default settings.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import invariant, precondition, run_state_machine_as_test

from chaoskube.checkers.verdict import Verdict
from chaoskube.client.client import ApiError
from chaoskube.sim import Process
from chaoskube.testing import ClusterMachine, InvariantViolation, default_settings, eventually, focus, shrinking_bounded, workload_weight
from chaoskube.testing.machine import DEFAULT_SETTINGS_ARGS, FAULT_RULE_NAMES

ROOT = Path(__file__).resolve().parents[2]


# =========================================================================== weights
def test_faults_are_a_quarter_of_the_draws_by_default():
    rules = Counter(rule.function.__name__ for rule in ClusterMachine.setup_state().rules)
    faults = sum(count for name, count in rules.items() if name in FAULT_RULE_NAMES)
    share = faults / sum(rules.values())
    assert 0.2 <= share <= 0.3, (share, rules)
    assert all(rules[name] == 1 for name in FAULT_RULE_NAMES if name in rules)
    assert rules["create_deployment"] == rules["wait"] > 1


def test_weights_can_be_set():
    uniform = type("Uniform", (ClusterMachine,), {"fault_share": 1.0, "__module__": __name__})
    assert set(Counter(rule.function.__name__ for rule in uniform.setup_state().rules).values()) == {1}
    chosen = type("Chosen", (ClusterMachine,), {"rule_weights": {"kill": 7, "cordon": 0}, "__module__": __name__})
    counted = Counter(rule.function.__name__ for rule in chosen.setup_state().rules)
    assert counted["kill"] == 7 and "cordon" not in counted
    no_faults = focus(ClusterMachine, "NoFaults", rules=("create_deployment", "scale_deployment"))
    assert set(Counter(rule.function.__name__ for rule in no_faults.setup_state().rules).values()) == {1}


@pytest.mark.parametrize(("faults", "others", "share", "weight"), [(21, 12, 0.25, 5), (1, 2, 0.25, 2), (3, 3, 0.5, 1), (21, 12, 1.0, 1), (0, 5, 0.25, 1), (5, 0, 0.25, 1)])
def test_workload_weight(faults, others, share, weight):
    assert workload_weight(faults, others, share) == weight


# =========================================================================== a wrong invariant fails
class WrongInvariant(ClusterMachine):
    """Wrong on purpose: a Deployment is never ready the moment it is created. Safety only
    (``liveness`` off): a passing example's teardown then only stops the world, and the
    search for the first failing example within the default budget costs no convergence
    phase per example."""

    examples = 0
    liveness = False

    def start_processes(self, world, cluster):
        type(self).examples += 1

    @precondition(lambda self: self.live is not None)
    @invariant()
    def every_deployment_is_ready_at_once(self) -> None:
        async def look():
            try:
                return (await self.client.list("deployments", "default")).items
            except ApiError:
                return []  # the API did not answer under a fault: nothing to judge

        for deployment in self.run(look):
            if deployment.status.ready_replicas < (deployment.spec.replicas or 0):
                self.require("ready at once", Verdict(False, f"{deployment.metadata.name}: {deployment.status.ready_replicas}/{deployment.spec.replicas} ready"))


def test_a_deliberately_wrong_invariant_fails_within_the_default_example_budget():
    WrongInvariant.examples = 0
    budget = settings(default_settings(), derandomize=True, database=None, phases=[Phase.generate])  # the default budget, no shrinking
    with pytest.raises(InvariantViolation) as caught:
        run_state_machine_as_test(WrongInvariant, settings=budget)
    assert caught.value.name == "ready at once"
    assert 1 <= WrongInvariant.examples <= DEFAULT_SETTINGS_ARGS["max_examples"], WrongInvariant.examples


def test_the_default_settings_are_the_test_cases():
    case = ClusterMachine.TestCase.settings
    assert (case.max_examples, case.stateful_step_count, case.deadline) == (DEFAULT_SETTINGS_ARGS["max_examples"], DEFAULT_SETTINGS_ARGS["stateful_step_count"], None)
    assert WrongInvariant.TestCase is WrongInvariant.TestCase and WrongInvariant.TestCase is not ClusterMachine.TestCase


# =========================================================================== shrinking bounded
def test_shrinking_is_bounded_through_hypothesis_own_bound():
    from hypothesis.internal.conjecture import engine

    before = engine.MAX_SHRINKING_SECONDS  # the name the machine relies on: an upgrade that drops it fails here
    with shrinking_bounded(7.5):
        assert engine.MAX_SHRINKING_SECONDS == 7.5
    assert engine.MAX_SHRINKING_SECONDS == before
    assert ClusterMachine.shrink_time_limit_s < before


# =========================================================================== eventually, start_processes, liveness
async def _idle(process: Process) -> None:
    import trio

    await trio.sleep_forever()


class Eventually(ClusterMachine):
    kill = None
    wanted = 2  # Deployments that must exist in the end
    started: list[str] = []

    def start_processes(self, world, cluster):
        world.spawn("my-operator", _idle, role="my-operator")

    @eventually
    async def enough_deployments(self) -> bool:
        return len((await self.client.list("deployments", "default")).items) >= self.wanted

    @eventually
    def the_operator_runs(self) -> None:
        assert self.world.processes["my-operator"].alive, "my-operator is down"


STEPS = [("boot", {"seed": 2}), ("create_deployment", {"name": "web", "replicas": 1}), ("create_deployment", {"name": "api", "replicas": 1})]


def test_eventually_properties_hold_after_the_heal():
    summary = Eventually.replay(STEPS)
    assert [name for name, _ in summary.steps][-1] == "teardown"


def test_an_eventually_property_that_never_holds_fails_with_its_reason():
    failing = type("NeverEnough", (Eventually,), {"wanted": 3, "__module__": __name__})
    with pytest.raises(InvariantViolation) as caught:
        failing.replay(STEPS)
    assert caught.value.name == "eventually"
    assert caught.value.verdict.reason.startswith("enough_deployments did not hold ") and "(deadline 300 s)" in caught.value.verdict.reason
    assert caught.value.chaoskube_run.steps[-1][0] == "teardown", "labelled with the run, for the plugin"


def test_an_assertion_in_an_eventually_property_is_its_reason():
    async def exits(process: Process) -> None:
        return  # an operator that exits at once, however often it is restarted

    class Down(Eventually):
        def start_processes(self, world, cluster):
            world.spawn("my-operator", exits, role="my-operator")

    Down.__module__ = __name__
    with pytest.raises(InvariantViolation) as caught:
        Down.replay(STEPS)
    assert "the_operator_runs did not hold" in caught.value.verdict.reason and "my-operator is down" in caught.value.verdict.reason


def test_start_processes_processes_are_healed_and_targetable():
    machine = Eventually()
    try:
        machine.boot(seed=1)
        assert machine.user_processes == ["my-operator"]
        active = machine.run_sync(machine.inject, "kill", "name:my-operator")
        assert active is not None and not machine.world.processes["my-operator"].alive
        machine.run_sync(machine._heal)
        assert machine.world.processes["my-operator"].alive, "heal restarts the user's process"
    finally:
        machine.live.stop()


def test_liveness_off_skips_the_teardown_phase():
    quick = type("Quick", (Eventually,), {"liveness": False, "wanted": 99, "__module__": __name__})
    summary = quick.replay(STEPS)  # the impossible eventually property is never judged
    assert "teardown" not in [name for name, _ in summary.steps]


# =========================================================================== the plugin reports an eventually failure
USER_TESTS = '''
from hypothesis import Phase, settings

from chaoskube.testing import ClusterMachine, eventually, focus

Small = focus(ClusterMachine, "Small", rules=("create_deployment",))


class Labelled(Small):
    @eventually
    async def three_deployments(self) -> bool:
        return len((await self.client.list("deployments", "default")).items) >= 3


TestLabelled = Labelled.TestCase
TestLabelled.settings = settings(max_examples=1, stateful_step_count=2, deadline=None, derandomize=True, database=None, phases=[Phase.generate])
'''


def test_the_plugin_reports_an_eventually_failure_with_seed_steps_and_saved_experiment(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_labelled.py").write_text(textwrap.dedent(USER_TESTS))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_labelled.py"], capture_output=True, text=True, cwd=tmp_path, timeout=600, check=False)
    out = result.stdout
    assert result.returncode == 1, out[-3000:] + result.stderr[-2000:]
    section = out[out.index("- chaoskube -"):]
    assert "seed: " in section and "steps (" in section and "teardown()" in section
    assert "saved experiment: " in section and "replay verdicts: failing eventually; as expected" in section, section
    saved = next((tmp_path / ".chaoskube" / "failures").rglob("*.yaml"))
    assert "three_deployments did not hold" in saved.read_text()

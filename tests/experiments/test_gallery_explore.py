"""The gallery of deliberately broken components (chaoskube/gallery.py), hunted the way a
user would: `chaoskube explore <its experiment> --broken <variant> --seeds 1..200
--fail-fast --jobs 2` must find a seed where the variant's checker fails, stop there, and
leave a run whose report.md and report.html point at the violation (the checker, its
reason and the shortest history slice that shows it).

The five variants of issue 6 each show on seed 1 of their experiment, so each slow test
takes a few seconds of wall time (two runs, then it stops)."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskube import gallery
from chaoskube.experiments import registry

ROOT = Path(__file__).resolve().parents[2]

#: The variants issue 6 asks the checkers to catch, each with the checker that must.
ISSUE_6 = {
    "eviction-skips-pdb": "pdb-eviction",
    "leader-election-no-expiry": "leader-election",
    "scheduler-ignores-taints": "scheduling",
    "node-controller-no-full-disruption-stop": "no-mass-eviction",
    "webhook-ignores-failure-policy": "admission",
}


def chaoskube(*args):
    environment = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", *args], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=600)


def test_each_issue_6_variant_names_a_catalogue_experiment_that_runs_its_checker():
    for name, checker in ISSUE_6.items():
        variant = gallery.VARIANTS[name]
        assert variant.caught_by == checker
        experiment = registry.find(variant.experiment)
        assert checker in experiment.checkers, (name, experiment.name)
        assert experiment.expected.outcome == "pass" and checker not in experiment.expected.may_fail, "unbroken, the checker must pass"


def test_the_taint_variant_has_tainted_nodes_to_ignore():
    cluster = registry.find(gallery.VARIANTS["scheduler-ignores-taints"].experiment).cluster
    assert any(group.get("taints") for group in cluster["nodeGroups"]), "without a tainted node the broken filter changes nothing"


def test_the_node_controller_variant_restores_the_real_plan_afterwards():
    from chaoskube.config import ControllerManagerConfig
    from chaoskube.controllers import nodelifecycle

    real = nodelifecycle.plan_disruption
    with gallery.applied(["node-controller-no-full-disruption-stop"]):
        broken = nodelifecycle.plan_disruption
        assert broken is not real
        from chaoskube.controllers.nodelifecycle import ZONE_FULL_DISRUPTION, ZONE_NORMAL

        previous = {"zone-a": ZONE_NORMAL, "zone-b": ZONE_NORMAL}
        every_zone_down = {"zone-a": ["Unknown", "Unknown"], "zone-b": ["Unknown"]}
        config = ControllerManagerConfig()
        assert real(previous, every_zone_down, config).mode == "enter"  # upstream: stop evicting
        plan = broken(previous, every_zone_down, config)
        assert plan.mode == "zones" and set(plan.states.values()) == {ZONE_FULL_DISRUPTION}
        assert all(qps > 0 for qps in plan.limiters.values()), "the broken controller keeps tainting at the normal rate"
    assert nodelifecycle.plan_disruption is real


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(ISSUE_6))
def test_explore_finds_the_broken_variant_and_the_report_points_at_the_violation(variant, tmp_path):
    checker = ISSUE_6[variant]
    experiment = gallery.VARIANTS[variant].experiment
    out = tmp_path / "campaign"
    result = chaoskube("explore", experiment, "--broken", variant, "--seeds", "1..200", "--fail-fast", "--jobs", "2", "--out", str(out))
    assert result.returncode == 1, result.stderr + result.stdout  # a finding: the checkers caught it
    assert "Traceback" not in result.stderr
    summary = json.loads((out / "summary.json").read_text())
    stopped = summary["stopped_early"]
    assert stopped is not None and stopped["experiment"] == experiment
    assert summary["finished_runs"] <= 4 < summary["planned_runs"] == 200, "--fail-fast stopped the campaign"
    (finding,) = summary["findings"]
    assert finding["broken"] == [variant] and finding["caught_by"] == [checker]
    assert stopped["seed"] in finding["caught_by_failed_on"] and stopped["seed"] == min(finding["caught_by_failed_on"])
    assert finding["caught_by_failed_on"][0] <= 2, f"found only on seed {finding['caught_by_failed_on'][0]}"
    replay = f"chaoskube run {experiment} --seed {stopped['seed']} --broken {variant}"
    assert stopped["replay"] == replay and replay in result.stdout
    assert f"{checker} failed (the variant's caught_by checker)" in stopped["why"]
    summary_md = (out / "summary.md").read_text()
    assert "Stopped early (--fail-fast)" in summary_md and replay in summary_md and f"{checker} failed on seeds" in summary_md
    assert 'id="findings"' in (out / "summary.html").read_text()

    run_dir = Path(stopped["out_dir"])
    recorded = json.loads((run_dir / "result.json").read_text())
    assert recorded["broken"] == [variant] and recorded["verdicts"][checker]["valid"] == "false"
    assert f"--broken {variant}" in recorded["replay"]
    evidence = recorded["verdicts"][checker]["evidence"]
    assert evidence, "a violation comes with the history that shows it"
    report = (run_dir / "report.md").read_text()
    assert f"`{variant}`" in report  # "Broken on purpose (gallery variants patched in ...)"
    assert f"| {checker} | false | " in report
    section = report.split(f"### {checker}: the shortest history that shows it", 1)
    assert len(section) == 2, f"report.md has no evidence section for {checker}"
    first_line = json.dumps(evidence[0], sort_keys=True, separators=(",", ":")) if not isinstance(evidence[0], str) else evidence[0]
    assert first_line in section[1].split("```")[1], "report.md shows the evidence slice"
    page = (run_dir / "report.html").read_text()
    assert f'data-checker="{checker}" data-verdict="fail"' in page and html.escape(recorded["verdicts"][checker]["reason"], quote=False)[:80] in page
    assert f"{checker}: the shortest history that shows it" in page

"""`chaoskube run|explore --broken NAME`, `--manifests DIR`, `explore --fail-fast`, the
experiment's default `seed`, `chaoskube list --broken` / `chaoskube gallery`, and
`chaoskube replay` of a run made with them: run as a user would (separate processes)."""

from __future__ import annotations

import json

from chaoskube import gallery
from tests.cli.test_cli import ROOT, chaoskube

SHOP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, labels: {app: shop}}
spec:
  replicas: 4
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: app, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 100m}}}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: shop}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: shop}}}
---
apiVersion: v1
kind: Service
metadata: {name: shop}
spec: {selector: {app: shop}, ports: [{port: 80, targetPort: 80}]}
"""


def test_list_broken_and_gallery_list_every_variant_with_its_checker_and_experiment():
    listed = chaoskube("list", "--broken")
    assert listed.returncode == 0, listed.stderr
    assert chaoskube("gallery").stdout == listed.stdout
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(gallery.VARIANTS)
    for line, variant in zip(lines, gallery.VARIANTS.values()):
        assert f"caught by {variant.caught_by}" in line
        if variant.experiment:
            assert f"chaoskube explore {variant.experiment} --broken {variant.name} --seeds 1..200 --fail-fast" in line


def test_run_with_a_broken_variant_records_it_and_replays_it(tmp_path):
    out = tmp_path / "run"
    result = chaoskube("run", "node-drain-with-pdb", "--seed", "1", "--broken", "eviction-skips-pdb", "--out", str(out))
    assert result.returncode == 1, result.stderr + result.stdout  # a finding: the checker caught the broken eviction
    assert "finding: pdb-eviction failed (the variant's caught_by checker) with eviction-skips-pdb broken on purpose: eviction of " in result.stdout
    payload = json.loads((out / "result.json").read_text())
    assert payload["broken"] == ["eviction-skips-pdb"]
    assert payload["verdicts"]["pdb-eviction"]["valid"] == "false"
    assert payload["replay"] == f"chaoskube run node-drain-with-pdb --seed 1 --broken eviction-skips-pdb --out {out}"
    replayed = chaoskube("replay", str(out))
    assert replayed.returncode == 0, replayed.stderr + replayed.stdout
    assert "match: the run replays byte for byte" in replayed.stdout
    unbroken = chaoskube("run", "node-drain-with-pdb", "--seed", "1", "--out", str(tmp_path / "unbroken"))
    assert unbroken.returncode == 0, unbroken.stdout
    assert json.loads((tmp_path / "unbroken" / "result.json").read_text())["journal_sha256"] != payload["journal_sha256"]


def test_run_and_explore_with_the_users_own_manifests(tmp_path):
    manifests = tmp_path / "shop"
    manifests.mkdir()
    (manifests / "shop.yaml").write_text(SHOP)
    dry = chaoskube("run", "node-drain-with-pdb", "--manifests", str(manifests), "--dry-run")
    assert dry.returncode == 0 and f"'manifests': ['{manifests}']" in dry.stdout and "'deployments': []" in dry.stdout
    out = tmp_path / "run"
    result = chaoskube("run", "node-drain-with-pdb", "--manifests", str(manifests), "--seed", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    payload = json.loads((out / "result.json").read_text())
    assert payload["verdicts"]["steady-state"]["valid"] == "true"
    assert payload["metrics"]["pods_ready"] == 4  # the shop Deployment, not the catalogue's web
    assert '"pdb":"default/shop"' in (out / "journal.jsonl").read_text()
    campaign = tmp_path / "campaign"
    explored = chaoskube("explore", "node-drain-with-pdb", "--manifests", str(manifests), "--seeds", "1..2", "--jobs", "2", "--out", str(campaign))
    assert explored.returncode == 0, explored.stderr + explored.stdout
    summary = json.loads((campaign / "summary.json").read_text())
    assert [run["replay"] for run in summary["runs"]] == [f"chaoskube run node-drain-with-pdb --seed {seed} --manifests {manifests}" for seed in (1, 2)]
    assert all(json.loads((campaign / f"node-drain-with-pdb-seed{seed}" / "result.json").read_text())["metrics"]["pods_ready"] == 4 for seed in (1, 2))


def test_the_experiment_file_gives_the_default_seed(tmp_path):
    path = tmp_path / "seeded.yaml"
    path.write_text((ROOT / "experiments" / "catalog" / "mesh-partition.yaml").read_text().replace("system: mesh", "system: mesh\nseed: 7"))
    assert chaoskube("run", str(path), "--dry-run").stdout.startswith("mesh-partition seed 7: ")
    assert chaoskube("run", str(path), "--dry-run", "--seed", "3").stdout.startswith("mesh-partition seed 3: ")
    assert chaoskube("run", "mesh-partition", "--dry-run").stdout.startswith("mesh-partition seed 1: ")


def test_fail_fast_stops_at_the_first_finding(tmp_path):
    # The livelock watchdog's false verdict is a finding: the campaign stops there.
    out = tmp_path / "campaign"
    result = chaoskube("explore", "etcd-leader-kill", "--seeds", "1..50", "--jobs", "1", "--fail-fast", "--max-wall", "0.001", "--out", str(out))
    assert result.returncode == 1, result.stderr + result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished_runs"] == 1 and summary["planned_runs"] == 50 and summary["interrupted"] is False
    stopped = summary["stopped_early"]
    assert (stopped["seed"], stopped["not_started"]) == (1, 49)
    assert stopped["replay"].startswith("chaoskube run etcd-leader-kill --seed 1")
    assert "livelock failed" in stopped["why"]
    assert "stopped early (--fail-fast) at etcd-leader-kill seed 1; 49 run(s) not started" in result.stdout
    assert "violations (not as expected):" in result.stdout
    assert "Stopped early (--fail-fast)" in (out / "summary.md").read_text()
    assert 'id="stopped"' in (out / "summary.html").read_text()
    assert sorted(path.name for path in out.iterdir() if path.is_dir()) == ["etcd-leader-kill-seed1"]


def test_fail_fast_goes_on_past_a_run_that_found_nothing(tmp_path):
    # An expected failure that did not show misses the outcome without a finding (issue 36):
    # --fail-fast does not stop there, and the terminal lists such runs apart.
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text((ROOT / "experiments" / "catalog" / "mesh-partition.yaml").read_text().replace("outcome: pass", "outcome: fail\n  failing: [steady-state]"))
    out = tmp_path / "campaign"
    result = chaoskube("explore", str(wrong), "--seeds", "1..2", "--jobs", "1", "--fail-fast", "--out", str(out))
    assert result.returncode == 1, result.stderr + result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished_runs"] == 2 and summary["stopped_early"] is None
    assert summary["noise"] == {"runs": 2, "mutated": 0, "dropped_checkers": {}}
    assert "not as expected, with no finding (inconclusive or unknown):" in result.stdout
    assert "steady-state passed, expected to fail" in result.stdout
    assert "stopped early" not in result.stdout


def test_a_broken_variant_for_another_system_is_refused(tmp_path):
    # The webhook variant patches kube-apiserver admission: a mesh run never calls it, so
    # "not caught" would be a green run that tested nothing.
    for args in (["explore", "mesh-partition", "--seeds", "1..2"], ["run", "mesh-partition"], ["run", "etcd-leader-kill"]):
        result = chaoskube(*args, "--broken", "webhook-ignores-failure-policy", "--out", str(tmp_path / "out"))
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "'webhook-ignores-failure-policy' breaks kube-apiserver admission (chaoskube.apiserver.webhooks), which a " in result.stderr
        assert "use it with webhook-latency-fail-closed" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_broken_variant_that_no_checker_notices_is_reported_as_not_caught(tmp_path):
    # The webhook variant patches kube-apiserver admission, which apiserver-crash runs, but
    # that experiment has no webhook to call and no admission checker.
    out = tmp_path / "campaign"
    result = chaoskube("explore", "apiserver-crash", "--broken", "webhook-ignores-failure-policy", "--seeds", "1..2", "--jobs", "2", "--fail-fast", "--out", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    summary = json.loads((out / "summary.json").read_text())
    (finding,) = summary["findings"]
    assert (finding["runs"], finding["runs_with_findings"], finding["caught_by"], finding["caught_by_failed_on"], finding["first"]) == (2, 0, ["admission"], [], None)
    assert summary["stopped_early"] is None and summary["as_expected"] == 2
    assert "the variant's checker (admission) failed on no seed" in result.stdout and "other checkers caught it" not in result.stdout
    (kind,) = summary["fault_kinds"][:1]
    for key in ("runs_with_violations", "violations", "recovery_s", "time_to_converge_s"):
        assert key in kind

"""The webhook, drain, rolling-update and random-nemesis experiments, seed 1, with the
behaviour each is about visible in the journal."""

import json

import pytest

from chaoskube.experiments import registry
from chaoskube.experiments.runner import run_experiment


def run(name, tmp_path, seed=1):
    out = tmp_path / name
    result = run_experiment(registry.find(name), seed, out)
    summary = {checker: (verdict.label, verdict.reason) for checker, verdict in result.verdicts.items()}
    assert result.as_expected, f"{name}: {summary}"
    events = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    return result, events


def calls(events, outcome):
    return [e for e in events if e["type"] == "webhook-call" and e["outcome"] == outcome]


def test_fail_closed_webhook_refuses_pods_while_slow(tmp_path):
    result, events = run("webhook-latency-fail-closed", tmp_path)
    assert calls(events, "error") and not calls(events, "ignored-error")
    assert result.verdicts["admission"].valid is True


def test_fail_open_webhook_lets_pods_through_and_the_checker_lists_bypasses(tmp_path):
    result, events = run("webhook-latency-fail-open", tmp_path)
    assert calls(events, "ignored-error") and not calls(events, "error")
    assert "bypass" in result.verdicts["admission"].reason and not result.verdicts["admission"].reason.startswith("0 ")


def test_self_deadlock_refuses_the_webhooks_own_pods_until_heal(tmp_path):
    result, events = run("webhook-self-deadlock", tmp_path)
    heal = next(e["t"] for e in events if e["type"] == "phase" and e["name"] == "heal")
    refused = calls(events, "error")
    assert refused and all(e["t"] < heal + 1 for e in refused)
    refused_ns = {e["namespace"] for e in events if e["type"] == "api-request" and e.get("resource") == "pods" and e.get("verb") == "create" and e.get("code") == 500}
    assert "webhooks" in refused_ns and "default" in refused_ns


def test_drain_waits_at_429_and_completes(tmp_path):
    result, events = run("node-drain-with-pdb", tmp_path)
    codes = [e["code"] for e in events if e["type"] == "drain" and e["event"] == "evict"]
    assert 429 in codes and codes.count(201) == 2
    assert any(e["type"] == "workload-step" and e["outcome"] == "drained" for e in events)
    assert result.verdicts["pdb-eviction"].valid is True


def test_rolling_update_under_partition_converges_after_heal(tmp_path):
    result, events = run("rolling-update-under-partition", tmp_path)
    assert any(e["type"] == "fault" and e["event"] == "apply" and e["kind"] == "control-plane-partition" for e in events)
    assert result.verdicts["convergence"].valid is True


def test_random_nemesis_mixes_kinds_and_heals(tmp_path):
    result, events = run("random-nemesis", tmp_path)
    applied = [e for e in events if e["type"] == "fault" and e["event"] == "apply"]
    healed = {e["id"] for e in events if e["type"] == "fault" and e["event"] == "heal"}
    assert len({e["kind"] for e in applied}) >= 3
    assert {e["id"] for e in applied} <= healed
    # the nemesis's faults are the run's: in its fault table, with their apply and heal times
    assert [fault["id"] for fault in result.faults] == sorted(e["id"] for e in applied)
    assert all(fault["healed_at"] is not None for fault in result.faults)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_nemesis_is_deterministic_per_seed(tmp_path, seed):
    faults = []
    for attempt in range(2):
        _, events = run("random-nemesis", tmp_path / str(attempt), seed)
        faults.append([e["faults"] for e in events if e["type"] == "nemesis"])
    assert faults[0] == faults[1] and faults[0]


@pytest.mark.parametrize("retries", [0, 6])
def test_a_step_with_retries_is_run_again_while_no_api_server_answers(tmp_path, retries):
    """swarm-apps seed 21: both API servers were down when its foreground delete of batch
    came; the one-shot step got a 503 and the garbage collector had no owner to judge. With
    ``retries`` the step is run again every ``retry_s`` until an API server answers."""
    from chaoskube.experiments.registry import load_experiment

    spec = tmp_path / "retried-delete.yaml"
    spec.write_text(f"""\
name: retried-delete
title: a foreground delete while every API server is down
description: a step retried while the API does not answer
source: "swarm-apps seed 21 (docs/experiments.md)"
system: kubernetes
cluster: {{etcdMembers: 1, apiServers: 1, controllerManagers: 1, schedulers: 1, nodeGroups: [{{count: 1}}]}}
workload:
  deployments: [{{name: fg, replicas: 1}}]
  steps: [{{after_s: 7, action: delete, deployment: fg, propagation: Foreground, retries: {retries}, retry_s: 2}}]
phases: {{setup_s: 30, warmup_s: 5, faults_s: 20, recovery_s: 30, settle_s: 5}}
schedule:
  - {{at_s: 1, kind: kill, target: "role:kube-apiserver", duration_s: 6}}
checkers: [garbage-collection]
expected: {{outcome: pass}}
""")
    out = tmp_path / "out"
    result = run_experiment(load_experiment(spec), 1, out)
    events = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    steps = [e for e in events if e["type"] == "workload-step"]
    assert len(steps) == 1
    if retries:
        assert steps[0]["outcome"] == "deleted (Foreground)" and steps[0]["attempts"] > 1, steps
        assert result.verdicts["garbage-collection"].valid is True, result.verdicts["garbage-collection"].reason
    else:
        assert steps[0]["outcome"].startswith("error: 503") and "attempts" not in steps[0], steps
        assert result.verdicts["garbage-collection"].valid is None

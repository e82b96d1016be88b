"""The workload generator's pure core (chaoskube/workload/generator.py) and its field in
experiment files: the same seed gives the same action list, weights and the rate are
respected, a bad field is one line naming the file and the field (exit code 2 through the
CLI); and a short scenario: a generator run journals one record per planned action that
came due, with its arguments and outcome, and replays byte for byte."""

from __future__ import annotations

import random
from collections import Counter

import msgspec
import pytest
import yaml

from chaoskube.api.manifests import from_dict
from chaoskube.experiments.model import Experiment, ExperimentError
from chaoskube.experiments.registry import load_experiment
from chaoskube.workload import ACTIONS, ARG_CHOICES, DEFAULT_WEIGHTS, GeneratorSpec, plan
from chaoskube.workload.actions import NAMESPACES
from tests.cli.test_bad_input import in_process  # noqa: F401 - the fixture
from tests.cli.test_bad_input_table import K8S, edited

SETUP = len(NAMESPACES) - 1  # the create_namespace actions every plan starts with


def spec(**fields):
    return msgspec.convert(fields, GeneratorSpec)


def test_the_same_seed_gives_the_same_plan_and_other_seeds_others():
    one = plan(random.Random(7), spec(rate_per_s=2.0), 100.0)
    again = plan(random.Random(7), spec(rate_per_s=2.0), 100.0)
    other = plan(random.Random(8), spec(rate_per_s=2.0), 100.0)
    assert one == again
    assert [item.to_json() for item in one] != [item.to_json() for item in other]
    assert all(0 <= item.at_s < 100.0 for item in one)
    assert [item.at_s for item in one] == sorted(item.at_s for item in one)


def test_every_argument_is_drawn_from_the_one_table():
    for item in plan(random.Random(3), spec(rate_per_s=5.0), 200.0):
        assert set(item.args) == set(ACTIONS[item.action].args)
        for name, value in item.args.items():
            assert value in ARG_CHOICES[name], (item, name)


def test_the_plan_starts_with_the_generator_namespaces():
    planned = plan(random.Random(1), spec(after_s=4.0), 50.0)
    assert [(item.at_s, item.action, item.args) for item in planned[:SETUP]] == [(4.0, "create_namespace", {"extra_namespace": name}) for name in NAMESPACES[1:]]
    assert all(item.at_s > 4.0 for item in planned[SETUP:])


def test_weights_are_respected():
    planned = plan(random.Random(11), spec(rate_per_s=50.0, max_actions=5000, weights={name: 0.0 for name in ACTIONS} | {"cordon": 3.0, "drain": 1.0}), 100.0)
    counted = Counter(item.action for item in planned[SETUP:])
    assert set(counted) == {"cordon", "drain"}, counted
    share = counted["cordon"] / sum(counted.values())
    assert 0.72 <= share <= 0.78, share  # 3:1, over ~5000 draws
    default = Counter(item.action for item in plan(random.Random(11), spec(rate_per_s=50.0, max_actions=5000), 100.0)[SETUP:])
    # every default weight is positive but issue 35's, off by default so existing plans stay as they were
    assert set(default) == {name for name, weight in DEFAULT_WEIGHTS.items() if weight > 0}
    assert {name for name, weight in DEFAULT_WEIGHTS.items() if weight == 0} == {"create_app_workload", "set_partition", "restart_member", "set_quota", "delete_quota", "set_default_storage_class", "delete_claim", "create_custom_resource"}
    ratio = default["create_workload"] / default["drain"]
    assert 8 <= ratio <= 16, ratio  # 6 : 0.5


def test_the_rate_is_actions_per_second_of_virtual_time():
    counts = [len(plan(random.Random(seed), spec(rate_per_s=2.0, max_actions=5000), 500.0)) - SETUP for seed in range(5)]
    assert all(900 <= count <= 1100 for count in counts), counts  # Poisson(1000)


def test_window_and_bounds():
    planned = plan(random.Random(2), spec(rate_per_s=10.0, after_s=5.0, window_s=10.0), 100.0)
    assert all(5.0 <= item.at_s < 15.0 for item in planned)
    assert len(plan(random.Random(2), spec(rate_per_s=50.0, max_actions=30), 100.0)) == 30
    assert plan(random.Random(2), spec(after_s=60.0), 50.0) == []  # it would start after the heal


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"rate_per_s": 0}, "`rate_per_s` must be a number in (0, 50]"),
        ({"weights": {"scale": 1.0}}, "`weights`: unknown action 'scale'"),
        ({"weights": {name: 0.0 for name in DEFAULT_WEIGHTS}}, "leave every action at 0"),
        ({"weights": {"drain": -1.0}}, "`weights.drain` must be a finite number >= 0"),
        ({"max_in_flight": 0}, "`max_in_flight` must be between 1 and 100"),
        ({"rate": 1.0}, "unknown field"),
    ],
)
def test_a_bad_generator_field_is_one_line_naming_the_file_and_field(tmp_path, fields, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(edited(K8S, "generator", fields), sort_keys=False))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: field `generator"), message
    assert fragment in message, message


def test_a_generator_needs_a_system_with_an_api_and_must_start_before_the_heal(tmp_path):
    from tests.cli.test_bad_input_table import ETCD

    path = tmp_path / "etcd.yaml"
    path.write_text(yaml.safe_dump(edited(ETCD, "generator", {"rate_per_s": 1.0}), sort_keys=False))
    with pytest.raises(ExperimentError, match=r"field `generator`: system 'etcd' has no API"):
        load_experiment(path)
    path.write_text(yaml.safe_dump(edited(K8S, "generator", {"after_s": 500}), sort_keys=False))
    with pytest.raises(ExperimentError, match=r"field `generator.after_s` = 500 starts the generator after the heal"):
        load_experiment(path)


def test_the_cli_refuses_a_bad_generator_with_exit_code_2(tmp_path, in_process):  # noqa: F811
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(edited(K8S, "generator", {"weights": {"nope": 1}}), sort_keys=False))
    result = in_process("run", path, "--out", tmp_path / "out")
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "field `generator" in lines[0] and str(path) in lines[0], result.stderr
    assert not (tmp_path / "out").exists()
    listed = in_process("validate", path)  # every problem on stdout, a count on stderr
    assert listed.returncode == 2 and "field `generator`: `weights`: unknown action 'nope'" in listed.stdout, listed


def test_the_experiment_field_is_typed():
    field = {item.name: item for item in msgspec.structs.fields(Experiment)}["generator"]
    assert field.default is None and "GeneratorSpec" in str(field.type)


# ----------------------------------------------------------------------------- scenario
SHORT = {
    **K8S,
    "name": "churn",
    "cluster": {"etcdMembers": 3, "apiServers": 1, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 3, "zones": ["zone-a", "zone-b", "zone-c"]}]},
    "workload": {"deployments": [{"name": "web", "replicas": 2}]},
    "phases": {"setup_s": 30, "warmup_s": 2, "faults_s": 30, "recovery_s": 90, "settle_s": 2},
    "schedule": [],
    "generator": {"rate_per_s": 2.0, "weights": {"create_workload": 6, "scale_workload": 3, "update_workload": 3, "delete_workload": 4, "delete_namespace": 1}},
    "checkers": ["steady-state", "convergence", "workload-invariants", "garbage-collection"],
}


def test_a_short_generator_run_journals_every_action_and_replays(tmp_path):
    from chaoskube.experiments.runner import run_experiment

    path = tmp_path / "churn.yaml"
    path.write_text(yaml.safe_dump(SHORT, sort_keys=False))
    experiment = load_experiment(path)
    first = run_experiment(experiment, 3, tmp_path / "one")
    second = run_experiment(experiment, 3, tmp_path / "two")
    assert first.journal_sha256 == second.journal_sha256
    events = [orjson_loads(line) for line in (tmp_path / "one" / "journal.jsonl").read_bytes().splitlines()]
    start = next(event for event in events if event["type"] == "generator" and event["event"] == "start")
    records = [event for event in events if event["type"] == "generator-action"]
    assert sorted(record["index"] for record in records) == list(range(len(start["plan"])))  # one record per action
    for record in records:
        at_s, action, args = start["plan"][record["index"]]
        assert (record["action"], record["args"], record["at_s"]) == (action, args, at_s)
        assert record["outcome"]
    assert any(record["outcome"] == "ok" and record["action"] == "delete_workload" for record in records)
    assert any(event["type"] == "generator" and event["event"] == "cleanup" for event in events)
    summary = {name: (verdict.label, verdict.reason) for name, verdict in first.verdicts.items()}
    assert first.as_expected, summary


def orjson_loads(line: bytes):
    import orjson

    return orjson.loads(line)


def test_the_application_shapes_build_each_kind_where_its_bugs_live():
    from chaoskube.api.manifests import to_dict
    from chaoskube.workload.actions import app_object

    built = {shape: to_dict(app_object(shape, "churn-a", f"{shape}-0")) for shape in ARG_CHOICES["app_shape"]}
    assert {shape: obj["kind"] for shape, obj in built.items()} == {
        "sts-claims": "StatefulSet", "sts-parallel": "StatefulSet", "job-indexed": "Job", "job-failing": "Job",
        "job-deadline": "Job", "cron-replace": "CronJob", "cron-zoned": "CronJob",
    }
    claims = built["sts-claims"]["spec"]
    assert claims["volumeClaimTemplates"][0]["metadata"]["name"] == "data" and claims["updateStrategy"]["rollingUpdate"]["partition"] == 1
    assert built["sts-parallel"]["spec"]["podManagementPolicy"] == "Parallel"
    assert built["job-indexed"]["spec"]["completionMode"] == "Indexed"
    assert built["job-failing"]["spec"]["backoffLimit"] == 1
    assert built["job-deadline"]["spec"]["activeDeadlineSeconds"] == 30
    assert built["cron-replace"]["spec"]["concurrencyPolicy"] == "Replace"
    assert built["cron-zoned"]["spec"]["timeZone"] == "Europe/Berlin"
    assert all(obj["metadata"]["labels"]["chaoskube.io/generator"] == "true" for obj in built.values())


def test_the_generators_quota_refuses_a_second_user_object_and_admits_every_pod():
    from chaoskube.api.quota import check_quota
    from chaoskube.workload.actions import quota_object, workload_object

    quota = quota_object("churn-a", 1)
    assert quota.metadata.labels["chaoskube.io/generator"] == "true"
    quota.status.hard = dict(quota.spec.hard)
    quota.status.used = {name: "0" for name in quota.spec.hard} | {"count/deployments.apps": "1", "pods": "59"}
    refusal, _ = check_quota([quota], workload_object("Deployment", "churn-a", "web-1", 2), "deployments")
    assert refusal is not None and refusal.startswith("exceeded quota: generator-quota, requested: count/deployments.apps=1"), refusal
    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "churn-a"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    refusal, charges = check_quota([quota], pod, "pods")
    assert refusal is None and charges[0][1]["pods"] == 1000
    refusal, _ = check_quota([quota], workload_object("StatefulSet", "churn-a", "db-0", 2), "statefulsets")
    assert refusal is None

"""Client topologies like the real ones (issue 16, deliverable 2): etcd clients pinned to
one member, serializable reads judged as etcd documents them, etcd's robustness
Kubernetes traffic, and kubelets pinned to one API server."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import msgspec
import pytest
import yaml

from chaoskube import gallery
from chaoskube.checkers.serializable import check_serializable_reads
from chaoskube.cluster import ClusterSpecError, load_cluster_spec
from chaoskube.experiments import registry
from chaoskube.experiments.runner import run_experiment
from chaoskube.experiments.systems.etcd import (
    KUBERNETES_WRITE_CHOICES,
    EtcdWorkload,
    KubernetesView,
    choose_kubernetes_write,
    linearizable_records,
    pinned_member,
)
from tests.cli.test_cli import chaoskube

PINNED = "etcd-pinned-clients-leader-isolation"


# -- unit: the traffic profile and the options ---------------------------------------------
def test_kubernetes_write_mix_is_etcd_robustness_75_15_10_from_a_seeded_rng():
    assert KUBERNETES_WRITE_CHOICES == (("update", 75), ("delete", 15), ("create", 10))
    rng = random.Random(7)
    counts = Counter(choose_kubernetes_write(5, 5, rng) for _ in range(20_000))
    assert set(counts) == {"update", "delete", "create"}
    for kind, weight in KUBERNETES_WRITE_CHOICES:
        assert abs(counts[kind] / 20_000 - weight / 100) < 0.01, counts
    again = random.Random(7)
    assert [choose_kubernetes_write(5, 5, again) for _ in range(50)] == [choose_kubernetes_write(5, 5, r) for r in [random.Random(7)] for _ in range(50)]


@pytest.mark.parametrize(("count", "expected"), [(0, "create"), (1, "create"), (8, "delete"), (20, "delete")])
def test_kubernetes_write_keeps_the_key_count_around_the_average(count, expected):
    # kubernetes.go: create below averageKeyCount/2, delete above averageKeyCount*3/2 (integer division)
    rng = random.Random(1)
    assert all(choose_kubernetes_write(count, 5, rng) == expected for _ in range(100))


def test_kubernetes_view_resets_only_from_newer_lists_and_ignores_older_events():
    kv = lambda key, rev, value: SimpleNamespace(key=key, mod_revision=rev, value=str(value))  # noqa: E731
    view = KubernetesView()
    view.reset(SimpleNamespace(header_revision=10, kvs=(kv("a", 4, 1), kv("b", 9, 2))))
    assert view.keys == {"a": (4, 1), "b": (9, 2)} and view.revision == 10
    view.reset(SimpleNamespace(header_revision=8, kvs=()))  # older: ignored
    assert view.keys == {"a": (4, 1), "b": (9, 2)}
    view.update(SimpleNamespace(type="PUT", kv=kv("a", 11, 3)))
    view.update(SimpleNamespace(type="DELETE", kv=kv("b", 12, "")))
    view.update(SimpleNamespace(type="PUT", kv=kv("c", 7, 4)))  # older than the view: ignored
    assert view.keys == {"a": (11, 3)} and view.revision == 12
    assert view.pick(random.Random(3)) == ("a", 11, 3)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"topology": "sticky"}, "`topology` must be one of rotate, pinned, got 'sticky'"),
        ({"traffic": "k8s"}, "`traffic` must be one of register, kubernetes, got 'k8s'"),
        ({"serializable_read": -1.0}, "`serializable_read` is a finite non-negative weight"),
        ({"traffic": "kubernetes", "keys": 1}, "must be at least 2"),
        ({"value_bytes": 2_000_000}, "`value_bytes` must be 0..1572864 (etcd's --max-request-bytes, 1.5 MiB)"),
    ],
)
def test_topology_options_are_validated_with_one_line_errors(fields, message):
    with pytest.raises(msgspec.ValidationError, match=re.escape(message)):
        msgspec.convert(fields, type=EtcdWorkload)


def test_a_bad_topology_in_an_experiment_file_exits_2_naming_the_field(tmp_path):
    document = yaml.safe_load((Path(registry.CATALOG) / f"{PINNED}.yaml").read_text())
    document["workload"]["topology"] = "sticky"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    completed = chaoskube("validate", str(path))
    assert completed.returncode == 2
    output = (completed.stdout + completed.stderr).strip()
    first = output.splitlines()[0]
    assert "Traceback" not in output, output
    assert first.startswith(str(path)) and "`topology` must be one of rotate, pinned, got 'sticky'" in first, output


def test_the_default_topology_and_traffic_are_unchanged():
    workload = EtcdWorkload()
    assert (workload.topology, workload.traffic, workload.serializable_read) == ("rotate", "register", 0.0)


def test_pinned_clients_spread_over_the_members_in_turn():
    members = ["etcd-1", "etcd-2", "etcd-3"]
    assert [pinned_member(members, index) for index in range(1, 8)] == ["etcd-1", "etcd-2", "etcd-3", "etcd-1", "etcd-2", "etcd-3", "etcd-1"]


def test_serializable_reads_are_left_out_of_the_linearizable_history():
    records = [
        {"type": "client-op", "phase": "invoke", "client": "c", "op_id": 1, "f": "read", "key": "k", "value": None, "consistency": "serializable", "t": 0.0},
        {"type": "client-op", "phase": "ok", "client": "c", "op_id": 1, "f": "read", "key": "k", "value": None, "output": 3, "revision": 4, "t": 1.0},
        {"type": "client-op", "phase": "invoke", "client": "c", "op_id": 2, "f": "read", "key": "k", "value": None, "t": 2.0},
        {"type": "client-op", "phase": "ok", "client": "c", "op_id": 2, "f": "read", "key": "k", "value": None, "output": 5, "t": 3.0},
    ]
    assert [record["op_id"] for record in linearizable_records(records)] == [2, 2]


def _apply(t, revision, key, value):
    return {"type": "raft-apply", "t": t, "revision": revision, "events": [["PUT" if value is not None else "DELETE", key, value, None]]}


def _sread(client, op_id, t0, t1, key, output, revision):
    return [
        {"type": "client-op", "phase": "invoke", "client": client, "op_id": op_id, "f": "read", "key": key, "value": None, "consistency": "serializable", "t": t0},
        {"type": "client-op", "phase": "ok", "client": client, "op_id": op_id, "f": "read", "key": key, "value": None, "output": output, "revision": revision, "t": t1},
    ]


def test_serializable_read_checker_accepts_a_stale_state_and_rejects_an_invented_one():
    history = [_apply(1.0, 2, "k", "10"), _apply(2.0, 3, "k", "20"), _apply(3.0, 4, "k", None)]
    stale = check_serializable_reads(history + _sread("c", 1, 3.5, 3.6, "k", 10, 2))  # k was deleted at 3.0
    assert stale.valid is True and "(1 of them stale" in stale.reason
    absent = check_serializable_reads(history + _sread("c", 1, 3.5, 3.6, "k", None, 1))
    assert absent.valid is True
    invented = check_serializable_reads(history + _sread("c", 1, 3.5, 3.6, "k", 20, 2))
    assert invented.valid is False and "at revision 2 returned 20; the store held 10" in invented.reason
    assert check_serializable_reads(history).valid is None


# -- scenarios ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pinned_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pinned") / "run"
    result = run_experiment(registry.find(PINNED), 1, out)
    return result, out


def test_a_pinned_client_never_talks_to_another_member(pinned_run):
    _, out = pinned_run
    members = ["etcd-1", "etcd-2", "etcd-3"]
    destinations: dict[str, set[str]] = {}
    for line in (out / "journal.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "send" and re.fullmatch(r"(client|watcher)-\d+", event["src"]):
            destinations.setdefault(event["src"], set()).add(event["dst"])
    assert set(destinations) == {f"client-{i}" for i in range(1, 7)} | {f"watcher-{i}" for i in range(1, 4)}
    for name, seen in destinations.items():
        assert seen == {pinned_member(members, int(name.rsplit("-", 1)[1]))}, (name, seen)


def test_serializable_reads_may_be_stale_and_are_accepted(pinned_run):
    result, _ = pinned_run
    assert result.as_expected
    verdict = result.verdicts["serializable-reads"]
    assert verdict.valid is True
    stale = int(re.search(r"\((\d+) of them stale", verdict.reason).group(1))
    assert stale > 0, verdict.reason  # the isolated member served old states, as etcd allows
    assert result.verdicts["linearizability"].valid is True


def test_a_linearizable_read_served_stale_by_a_pinned_member_is_caught(tmp_path):
    with gallery.applied(["etcd-linearizable-read-served-locally"]):
        result = run_experiment(registry.find(PINNED), 1, tmp_path / "broken")
    verdict = result.verdicts["linearizability"]
    assert verdict.valid is False, verdict.reason
    assert result.verdicts["serializable-reads"].valid is True  # the serializable ones stay legal


def test_the_kubernetes_traffic_writes_optimistic_transactions_on_registry_pods(tmp_path):
    document = yaml.safe_load((Path(registry.CATALOG) / "etcd-kubernetes-traffic.yaml").read_text())
    document["phases"] = {"warmup_s": 2, "faults_s": 6, "recovery_s": 5, "settle_s": 2}
    document["schedule"] = [{"at_s": 1, "kind": "isolate", "target": "leader:etcd", "duration_s": 3}]
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(document))
    result = run_experiment(registry.load_experiment(path), 1, tmp_path / "run")
    assert result.as_expected, {name: verdict.reason for name, verdict in result.verdicts.items()}
    invokes = [json.loads(line) for line in (tmp_path / "run" / "journal.jsonl").read_text().splitlines() if '"client-op"' in line and '"invoke"' in line]
    kinds = Counter(event.get("txn") for event in invokes if event["f"] == "cas")
    assert kinds["update"] > kinds["delete"] > 0 and kinds["create"] > 0, kinds
    assert all(event["key"].startswith("/registry/pods/default/") for event in invokes)
    assert all(event["mod_revision"] == 0 for event in invokes if event.get("txn") == "create")


# -- Kubernetes: kubelets pinned to one API server -------------------------------------------
def test_api_client_topology_is_validated():
    assert load_cluster_spec({"apiClientTopology": "pinned"}).api_client_topology == "pinned"
    assert load_cluster_spec({}).api_client_topology == "rotate"
    with pytest.raises(ClusterSpecError, match="`apiClientTopology` must be rotate or pinned, got 'lb'"):
        load_cluster_spec({"apiClientTopology": "lb"})


def test_a_pinned_api_client_moves_only_when_its_server_refuses():
    from chaoskube.client.client import ApiClient

    process = SimpleNamespace(random=lambda name: random.Random(name), memory={}, name="node-1", incarnation=1)
    pinned = ApiClient(process, ["kube-apiserver-1", "kube-apiserver-2"], credentials=None, pinned_to=1)
    assert pinned.server == "kube-apiserver-2"
    pinned.rotate()  # a timeout, a broken watch: it stays
    assert pinned.server == "kube-apiserver-2"
    pinned.rotate(refused=True)  # the server is down: the new connection lands elsewhere
    assert pinned.server == "kube-apiserver-1"
    rotating = ApiClient(process, ["kube-apiserver-1", "kube-apiserver-2"], credentials=None)
    before = rotating.server
    rotating.rotate()
    assert rotating.server != before


@pytest.mark.parametrize(("field", "value"), [("traffic", "kubernetes"), ("value_bytes", 1_100_000)])
def test_the_real_etcd_system_refuses_the_simulated_topologies(tmp_path, field, value):
    document = yaml.safe_load((Path(registry.CATALOG) / "real-etcd-leader-kill.yaml").read_text())
    document["workload"][field] = value
    path = tmp_path / "real.yaml"
    path.write_text(yaml.safe_dump(document))
    completed = chaoskube("validate", str(path))
    assert completed.returncode == 2
    assert f"field `workload.{field}`: not supported by the real-etcd system" in completed.stdout + completed.stderr


@pytest.mark.slow
def test_pinned_kubelets_talk_to_one_api_server_each(tmp_path):
    result = run_experiment(registry.find("kubernetes-pinned-kubelets-etcd-failover"), 1, tmp_path / "run")
    assert result.as_expected, {name: verdict.reason for name, verdict in result.verdicts.items()}
    servers: dict[str, set[str]] = {}
    for line in (tmp_path / "run" / "journal.jsonl").read_text().splitlines():
        if '"send"' not in line:
            continue
        event = json.loads(line)
        if event["type"] == "send" and event["src"].startswith("node-") and event["dst"].startswith("kube-apiserver-"):
            servers.setdefault(event["src"], set()).add(event["dst"])
    # node i (0-based index i - 1) on kube-apiserver-((i - 1) mod 2 + 1); no server was down, so none moved
    assert servers == {"node-1": {"kube-apiserver-1"}, "node-2": {"kube-apiserver-2"}, "node-3": {"kube-apiserver-1"}}

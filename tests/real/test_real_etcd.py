"""A real 3-member etcd cluster under the same faults and checkers as the simulation.

The runs are module-scoped (one leader kill, one leader isolation, ~20 s each); every
test that runs real processes then checks that none is left: each pid the run started is
gone (reaped, not a zombie) and nothing listens on any port it used.
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import orjson
import pytest

from chaoskube.experiments import registry
from chaoskube.experiments.model import FaultEntry
from chaoskube.experiments.real.cluster import symmetric_blocks
from chaoskube.experiments.real.etcd import check_history, check_leader_election, check_real_watches, leadership_runs
from chaoskube.experiments.real.runner import RealRunResult, run_real_experiment
from chaoskube.experiments.runner import run_experiment
from chaoskube.sim.journal import read_journal

ROOT = Path(__file__).resolve().parents[2]


# -- hygiene --------------------------------------------------------------------------------


def listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as file:
            next(file)
            for line in file:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def live_etcd(pid: int) -> bool:
    """The pid still names an etcd process, running or a zombie (``kill -0`` succeeds on
    a zombie, so read /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    name = status.split("\n", 1)[0].split()[-1]
    return name == "etcd"


def assert_nothing_left(pids: list[int], ports: list[int]) -> None:
    assert pids, "the run recorded no pids"
    left = [pid for pid in pids if live_etcd(pid)]
    assert not left, f"etcd processes left (or not reaped): {left}"
    listening = listening_ports() & set(ports)
    assert not listening, f"ports still listening after the run: {sorted(listening)}"


def run_and_check_hygiene(experiment, seed: int, out: Path) -> RealRunResult:
    result = run_real_experiment(experiment, seed, out)
    assert isinstance(result, RealRunResult)
    assert_nothing_left(result.processes["pids"], result.processes["ports"])
    return result


# -- the runs -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def leader_kill(etcd_binary, tmp_path_factory) -> RealRunResult:
    experiment = registry.find("real-etcd-leader-kill")
    return run_and_check_hygiene(experiment, 1, tmp_path_factory.mktemp("leader-kill"))


@pytest.fixture(scope="module")
def leader_isolation(etcd_binary, tmp_path_factory) -> RealRunResult:
    experiment = registry.find("real-etcd-partition")
    experiment = msgspec.structs.replace(
        experiment,
        schedule=[FaultEntry(at_s=1.0, kind="isolate", target="leader:etcd", duration_s=4.0)],
        phases=msgspec.structs.replace(experiment.phases, faults_s=6.0),
    )
    return run_and_check_hygiene(experiment, 3, tmp_path_factory.mktemp("isolation"))


def assert_new_leader_and_writes(result: RealRunResult) -> None:
    assert not result.interrupted and "error" not in result.metrics, result.metrics
    for name in ("linearizability", "leader-election", "steady-state", "watch"):
        assert result.verdicts[name].valid is True, (name, result.verdicts[name])
    assert result.as_expected
    metrics = result.metrics
    target = result.faults[0]["targets"][0]
    assert 0 < metrics["time_to_new_leader_s"] < 5, metrics
    assert 0 < metrics["time_to_write_s"] < 5, metrics
    assert "recovery_s" in metrics and metrics["recovery_s"] < result.experiment.phases.recovery_s
    events = list(read_journal(result.out_dir / "journal.jsonl"))
    at = metrics["first_fault_at_s"]
    new_leaders = {event["leader"] for event in events if event["type"] == "leader" and event["t"] > at and event.get("leader")}
    assert new_leaders - {target}, f"no leader other than the faulted {target} after the fault"
    written_after = [event for event in events if event["type"] == "client-op" and event["phase"] == "ok" and event["f"] == "write" and event["t"] > at + metrics["time_to_write_s"]]
    assert len(written_after) > 10, "writes did not resume"
    payload = orjson.loads((result.out_dir / "result.json").read_bytes())
    assert payload["mode"] == "real-time" and payload["metrics"]["time_to_new_leader_s"] == metrics["time_to_new_leader_s"]
    comparison = payload["comparison"]
    assert comparison["simulated"]["time_to_new_leader_s"] is not None
    assert comparison["simulated"]["verdicts"]["linearizability"] == "true"
    assert "| time to a new leader after the first fault |" in (result.out_dir / "report.md").read_text()


@pytest.mark.slow
def test_leader_kill_elects_a_new_leader_and_writes_resume(leader_kill):
    assert leader_kill.faults[0]["kind"] == "kill"
    assert_new_leader_and_writes(leader_kill)


@pytest.mark.slow
def test_leader_isolation_elects_a_new_leader_and_writes_resume(leader_isolation):
    assert leader_isolation.faults[0]["kind"] == "isolate"
    assert_new_leader_and_writes(leader_isolation)


# -- the checkers catch a corrupted real history -----------------------------------------------


def _events(result: RealRunResult) -> list[dict]:
    return [event for event in read_journal(result.out_dir / "journal.jsonl")]


@pytest.mark.slow
def test_removing_an_acknowledged_write_is_caught(leader_kill):
    events = _events(leader_kill)
    assert check_history(events).valid is True
    reads = {(e["key"], e["output"]) for e in events if e["type"] == "client-op" and e["phase"] == "ok" and e["f"] == "read"}
    write = next(e for e in events if e["type"] == "client-op" and e["phase"] == "ok" and e["f"] == "write" and (e["key"], e["value"]) in reads)
    pair = (write["client"], write["op_id"])
    corrupted = [e for e in events if not (e["type"] == "client-op" and (e["client"], e["op_id"]) == pair)]
    verdict = check_history(corrupted)
    assert verdict.valid is False, verdict
    assert verdict.evidence


@pytest.mark.slow
def test_a_stale_read_is_caught(leader_kill):
    events = _events(leader_kill)
    ops = [e for e in events if e["type"] == "client-op"]
    invoked = {(e["client"], e["op_id"]): e for e in ops if e["phase"] == "invoke"}
    done = [(invoked[(e["client"], e["op_id"])], e) for e in ops if e["phase"] == "ok"]
    writes = [(call, ret) for call, ret in done if ret["f"] == "write"]
    # A read that began after two acknowledged writes W1 -> W2 on its key (W1 done before
    # W2 began): it can never see W1's value again (values are unique).
    for call, ret in reversed(done):
        if ret["f"] != "read":
            continue
        earlier = [(c, r) for c, r in writes if c["key"] == call["key"] and r["t"] < call["t"]]
        pairs = [(w1, w2) for w1 in earlier for w2 in earlier if w1[1]["t"] < w2[0]["t"]]
        if pairs:
            stale = pairs[0][0][1]["value"]
            break
    else:
        pytest.fail("no read after two sequential writes in the history")
    corrupted = copy.deepcopy(events)
    for event in corrupted:
        if event["type"] == "client-op" and (event["client"], event["op_id"]) == (ret["client"], ret["op_id"]) and event["phase"] == "ok":
            event["output"] = stale
    verdict = check_history(corrupted)
    assert verdict.valid is False, verdict


@pytest.mark.slow
def test_a_missed_or_invented_watch_event_is_caught(leader_kill):
    events = _events(leader_kill)
    prefixes = {"watcher-1": "key/"}
    assert check_real_watches(events, prefixes).valid is True
    watched = [i for i, e in enumerate(events) if e["type"] == "watch-event"]
    missing = [e for i, e in enumerate(events) if i != watched[len(watched) // 2]]
    assert check_real_watches(missing, prefixes).valid is False
    invented = copy.deepcopy(events)
    invented[watched[-1]]["value"] = "424242"
    assert check_real_watches(invented, prefixes).valid is False


# -- Ctrl-C ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_stops_and_reaps_every_member(etcd_binary, tmp_path):
    out = tmp_path / "interrupted"
    process = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", "run", "real-etcd-pause", "--seed", "1", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        journal = out / "journal.jsonl"
        while time.monotonic() < deadline:  # wait until the workload runs
            if journal.exists() and b'"name":"workload"' in journal.read_bytes():
                break
            time.sleep(0.2)
        else:
            pytest.fail("the run never reached the workload phase")
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, output.decode()[-2000:]
    events = list(read_journal(out / "journal.jsonl"))
    pids = [event["pid"] for event in events if event["type"] == "process" and event.get("event") == "start"]
    started = next(event for event in events if event["type"] == "cluster" and event.get("event") == "started")
    ports = [port for member in started["members"].values() for port in member.values()]
    assert any(event["type"] == "cluster" and event.get("event") == "stopped" for event in events)
    assert_nothing_left(pids, ports)
    assert orjson.loads((out / "result.json").read_bytes())["interrupted"] is True


# -- pure helpers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grudge", "expected"),
    [
        ({}, {"a": [], "b": [], "c": []}),
        ({"a": {"b", "c"}, "b": {"a"}, "c": {"a"}}, {"a": ["b", "c"], "b": ["a"], "c": ["a"]}),
        ({"b": {"a"}}, {"a": ["b"], "b": ["a"], "c": []}),  # one-way becomes both ways
        ({"a": {"a", "z"}}, {"a": [], "b": [], "c": []}),  # self and unknown names ignored
    ],
)
def test_symmetric_blocks(grudge, expected):
    assert symmetric_blocks(grudge, ["a", "b", "c"]) == expected


def _poll(t, member, leader, term):
    return {"type": "leader", "t": t, "member": member, "leader": leader, "term": term, "reachable": leader is not None}


def test_leader_election_ignores_hearsay_and_applied_term_lag():
    # etcd-2 learns of etcd-3 before applying an entry of term 3: it names etcd-3 with
    # term 2 while etcd-2 led term 2. Not a violation.
    events = [_poll(1.0, "etcd-2", "etcd-2", 2), _poll(5.0, "etcd-2", None, None), _poll(5.5, "etcd-3", "etcd-3", 2), _poll(5.6, "etcd-3", "etcd-3", 3), _poll(6.0, "etcd-2", "etcd-3", 2)]
    assert check_leader_election(events).valid is True
    assert [(run["leader"], run["term"]) for run in leadership_runs(events)] == [("etcd-2", 2), ("etcd-3", 3)]


def test_leader_election_catches_two_self_claimed_leaders_of_one_term():
    events = [_poll(1.0, "etcd-1", "etcd-1", 4), _poll(1.1, "etcd-2", "etcd-2", 4), _poll(2.0, "etcd-1", "etcd-2", 4)]
    verdict = check_leader_election(events)
    assert verdict.valid is False and "term 4" in verdict.reason


def test_unsupported_fault_kinds_are_refused_before_anything_starts(tmp_path):
    experiment = registry.find("real-etcd-pause")
    experiment = msgspec.structs.replace(experiment, schedule=[FaultEntry(at_s=1.0, kind="clock-jump", target="leader:etcd")])
    from chaoskube.experiments.model import ExperimentError

    with pytest.raises(ExperimentError, match="clock-jump"):
        run_experiment(experiment, 1, tmp_path)
    assert not (tmp_path / "journal.jsonl").exists()


def test_real_catalogue_experiments_validate():
    for name in ("real-etcd-leader-kill", "real-etcd-partition", "real-etcd-pause"):
        experiment = registry.find(name)
        assert experiment.system == "real-etcd"
        assert os.path.basename(experiment.path) == f"{name}.yaml"


def _external_proxy_experiment(address: str, kind: str, *extra: dict):
    import msgspec

    from chaoskube.experiments.model import Experiment

    return msgspec.convert(
        {
            "name": "real-etcd-external-proxy",
            "title": "real etcd through a Toxiproxy server given by address",
            "description": "tests/real",
            "source": "tests",
            "system": "real-etcd",
            "cluster": {"members": 3, "heartbeat_ms": 50, "election_ms": 500, "toxiproxy": address, "compare_with_simulation": False},
            "workload": {"clients": 3, "keys": 2, "rate_per_s": 30},
            "phases": {"setup_s": 15, "warmup_s": 1, "faults_s": 5, "recovery_s": 10, "settle_s": 1},
            "schedule": [{"at_s": 1, "kind": kind, "target": "leader:etcd", "duration_s": 3}, *extra],
            "checkers": ["linearizability", "steady-state"],
        },
        type=Experiment,
    )


@pytest.mark.slow
def test_a_toxiproxy_server_given_by_address_is_used(etcd_binary, tmp_path):
    """The peer links go through the server at the given address (any Toxiproxy 2.x API),
    and it is left running: it is not ours to stop."""
    import random

    import toxiproxy.api

    from chaoskube.faults.toxiproxy import ToxiproxyServer

    delay = {"at_s": 2, "kind": "link-delay", "target": "role:etcd", "duration_s": 1, "params": {"delay_ms": 20}}
    with ToxiproxyServer(rng=random.Random(1)) as server:
        host, port = server.api_address
        result = run_and_check_hygiene(_external_proxy_experiment(f"{host}:{port}", "kill", delay), 1, tmp_path / "run")
        assert result.as_expected, {name: verdict.reason for name, verdict in result.verdicts.items()}
        toxics = [event for event in _events(result) if event["type"] == "toxic"]
        assert toxics, "the link delay went through no Toxiproxy API"
        toxiproxy.api.APIConsumer.host, toxiproxy.api.APIConsumer.port = host, port
        assert toxiproxy.Toxiproxy().proxies() == {}  # the run removed the proxies it created


def test_partitions_through_an_external_toxiproxy_are_refused(tmp_path):
    from chaoskube.experiments.model import ExperimentError

    with pytest.raises(ExperimentError, match=r"cluster.toxiproxy.*chaoskube_block_from"):
        run_real_experiment(_external_proxy_experiment("127.0.0.1:1", "isolate"), 1, tmp_path / "run")


@pytest.mark.parametrize("name", ["real-etcd-leader-kill", "real-etcd-partition", "real-etcd-pause"])
def test_the_simulated_twin_is_a_valid_simulated_experiment(name):
    from chaoskube.experiments.real.runner import simulated_twin
    from chaoskube.experiments.systems.etcd import EtcdSystem

    experiment = registry.find(name)
    twin = simulated_twin(msgspec.structs.replace(experiment, cluster={**experiment.cluster, "toxiproxy": "127.0.0.1:1"}))
    cluster, _ = EtcdSystem.options(twin.cluster, twin.workload)
    assert (cluster.members, cluster.heartbeat_ms, cluster.election_ms) == (3, experiment.cluster.get("heartbeat_ms", 100), experiment.cluster.get("election_ms", 1000))
    assert twin.schedule == experiment.schedule

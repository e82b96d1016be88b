"""`chaoskube check-history` agrees with the published verdict on every peer history."""

import json

import pytest

from chaoskube.experiments.cli import main
from tests.checkers.test_linearizability import EXPECTED_ETCD, EXPECTED_KV, HISTORIES


def check_history(capsys, *args):
    with pytest.raises(SystemExit) as exit_info:
        main(["check-history", *args])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


CASES = [(f"etcd/etcd_{number}.log", "jepsen-etcd", expected) for number, expected in sorted(EXPECTED_ETCD.items())]
CASES += [(f"kv/{name}", "porcupine-kv", expected) for name, expected in sorted(EXPECTED_KV.items())]


@pytest.mark.parametrize(("name", "fmt", "expected"), CASES, ids=[case[0] for case in CASES])
def test_every_peer_history_gets_its_published_verdict(capsys, name, fmt, expected):
    code, out, _ = check_history(capsys, str(HISTORIES / name), "--format", fmt)
    assert out.strip() == ("linearizable" if expected else "not linearizable")
    assert code == (0 if expected else 1)


def test_json_output_has_the_operation_count_and_check_time(capsys):
    code, out, _ = check_history(capsys, str(HISTORIES / "etcd/etcd_000.log"), "--format", "jepsen-etcd", "--json")
    payload = json.loads(out)
    assert code == 1
    assert payload["result"] == "not linearizable"
    assert payload["operations"] == 85
    assert payload["check_seconds"] > 0
    assert payload["evidence"]


def test_time_limit_gives_unknown_and_exit_3(capsys):
    code, out, _ = check_history(capsys, str(HISTORIES / "kv/c50-ok.txt"), "--format", "porcupine-kv", "--time-limit", "0.0001")
    assert (code, out.strip()) == (3, "unknown")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/no/such/file", "--format", "jepsen-etcd"], "cannot read history"),
        ([str(HISTORIES / "kv/c01-ok.txt"), "--format", "jepsen-etcd"], ":1:"),
        ([str(HISTORIES / "etcd/etcd_000.log"), "--format", "csv"], "--format"),
    ],
)
def test_unreadable_input_exits_2_with_one_line(capsys, args, message):
    code, _, err = check_history(capsys, *args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err

"""Parsers of operation histories: Jepsen etcd logs, porcupine key-value files, client journals.

The rules are those of shared/peers/jepsen-histories/README.md.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
from pathlib import Path

from tests.conftest import PEERS

import pytest

from chaoskube.checkers.history import (
    UNKNOWN,
    HistoryFormatError,
    Op,
    from_client_records,
    load_history,
    parse_jepsen_etcd,
    parse_porcupine_kv,
)

HISTORIES = PEERS / "jepsen-histories"
# The peer data always sits beside the clone (../shared); missing data is an error, never a skip.
assert HISTORIES.is_dir(), f"peer histories missing: {HISTORIES}"
def needs_histories(test):  # kept as a marker of the tests that read ../shared
    return test


def etcd_line(process: int, kind: str, f: str, value: str, sep: str = "\t") -> str:
    return f"INFO  jepsen.util - {process}{sep}:{kind}{sep}:{f}{sep}{value}"


# -- Jepsen etcd -------------------------------------------------------------------------------


def test_etcd_operations_pair_invocations_with_completions_by_process():
    ops = parse_jepsen_etcd([
        etcd_line(0, "invoke", "read", "nil"),       # line 1
        etcd_line(1, "invoke", "write", "3"),        # line 2
        etcd_line(1, "ok", "write", "3"),            # line 3
        etcd_line(0, "ok", "read", "3"),             # line 4
        etcd_line(2, "invoke", "read", "nil"),       # line 5
        etcd_line(2, "ok", "read", "nil"),           # line 6
    ])
    assert ops == [
        Op(0, 0, "read", None, None, 3, "ok", 1.0, 4.0),
        Op(1, 1, "write", None, 3, None, "ok", 2.0, 3.0),
        Op(2, 2, "read", None, None, None, "ok", 5.0, 6.0),
    ]


def test_etcd_cas_outcomes_are_observations():
    ops = parse_jepsen_etcd([
        etcd_line(2, "invoke", "cas", "[3 0]"),
        etcd_line(2, "ok", "cas", "[3 0]"),
        etcd_line(1, "invoke", "cas", "[0 3]"),
        etcd_line(1, "fail", "cas", "[0 3]"),
    ])
    assert [(op.value, op.output, op.status) for op in ops] == [
        ((3, 0), True, "ok"),
        ((0, 3), False, "ok"),  # a failed compare is determinate: status ok, output False
    ]


def test_etcd_info_stays_open_until_the_end():
    ops = parse_jepsen_etcd([
        etcd_line(4, "invoke", "write", "3"),
        etcd_line(4, "info", "write", ":timed-out"),
        etcd_line(9, "invoke", "cas", "[1 2]"),
        etcd_line(9, "info", "cas", ":timed-out"),
    ])
    assert [(op.status, op.output, op.ret, op.call) for op in ops] == [
        ("info", UNKNOWN, math.inf, 1.0),
        ("info", UNKNOWN, math.inf, 3.0),
    ]


def test_etcd_timed_out_read_completes_with_unknown_output():
    ops = parse_jepsen_etcd([
        etcd_line(3, "invoke", "read", "nil", sep="   "),
        etcd_line(3, "fail", "read", ":timed-out", sep="   "),
    ])
    assert ops == [Op(0, 3, "read", None, None, UNKNOWN, "ok", 1.0, 2.0)]


def test_etcd_failed_write_did_not_happen():
    ops = parse_jepsen_etcd([etcd_line(0, "invoke", "write", "1"),
                             etcd_line(0, "fail", "write", "1")])
    assert ops[0].status == "fail"


def test_etcd_operation_never_completed_is_open():
    ops = parse_jepsen_etcd([etcd_line(0, "invoke", "write", "1")])
    assert (ops[0].status, ops[0].ret, ops[0].output) == ("info", math.inf, UNKNOWN)


def test_etcd_blank_lines_are_skipped_but_keep_their_numbers():
    ops = parse_jepsen_etcd([etcd_line(0, "invoke", "read", "nil"), "",
                             etcd_line(0, "ok", "read", "1")])
    assert (ops[0].call, ops[0].ret) == (1.0, 3.0)


@pytest.mark.parametrize(
    ("lines", "line_number", "words"),
    [
        ([etcd_line(0, "invoke", "read", "nil"), "garbage"], 2, "not a jepsen.util"),
        ([etcd_line(0, "invoke", "frob", "nil")], 1, "not a jepsen.util"),
        ([etcd_line(0, "invoke", "write", "banana")], 1, "unrecognised value"),
        ([etcd_line(0, "invoke", "write", "nil")], 1, "bad argument"),
        ([etcd_line(0, "invoke", "cas", "7")], 1, "bad argument"),
        ([etcd_line(0, "ok", "read", "1")], 1, "no open operation"),
        ([etcd_line(0, "invoke", "read", "nil"), etcd_line(0, "invoke", "read", "nil")], 2,
         "still open"),
        ([etcd_line(0, "invoke", "read", "nil"), etcd_line(0, "ok", "write", "1")], 2,
         "open operation is read"),
        ([etcd_line(0, "invoke", "cas", "[1 2]"), etcd_line(0, "ok", "cas", "1")], 2,
         "bad cas completion"),
    ],
)
def test_etcd_malformed_lines_name_file_and_line(lines, line_number, words):
    with pytest.raises(HistoryFormatError) as caught:
        parse_jepsen_etcd(lines, source="run/etcd.log")
    message = str(caught.value)
    assert message.startswith(f"run/etcd.log:{line_number}: ")
    assert words in message
    assert "\n" not in message
    assert caught.value.line_number == line_number


# -- porcupine key-value -----------------------------------------------------------------------


def test_kv_operations():
    ops = parse_porcupine_kv([
        '{:process 0, :type :invoke, :f :append, :key "0", :value "x 0 0 y"}',
        '{:process 1, :type :invoke, :f :get, :key "0", :value nil}',
        '{:process 0, :type :ok, :f :append, :key "0", :value "x 0 0 y"}',
        '{:process 1, :type :ok, :f :get, :key "0", :value "x 0 0 y"}',
        '{:process 1, :type :invoke, :f :put, :key "5", :value ""}',
        '{:process 1, :type :ok, :f :put, :key "5", :value ""}',
    ])
    assert ops == [
        Op(0, 0, "append", "0", "x 0 0 y", None, "ok", 1.0, 3.0),
        Op(1, 1, "get", "0", None, "x 0 0 y", "ok", 2.0, 4.0),
        Op(2, 1, "put", "5", "", None, "ok", 5.0, 6.0),
    ]


def test_kv_malformed_line():
    with pytest.raises(HistoryFormatError, match=r"^kv\.txt:2: not a key-value"):
        parse_porcupine_kv([
            '{:process 0, :type :invoke, :f :get, :key "0", :value nil}',
            '{:process 0, :type :ok, :f :get, :key 0, :value ""}',
        ], source="kv.txt")


# -- files -------------------------------------------------------------------------------------


@needs_histories
def test_all_etcd_files_parse_with_the_counts_of_the_readme():
    files = sorted((HISTORIES / "etcd").glob("*.log"))
    assert len(files) == 103
    histories = {path.name: load_history(path, "jepsen-etcd") for path in files}
    every = [op for ops in histories.values() for op in ops]
    assert len(every) == 2939 + 2748 + 2836  # the :invoke lines
    assert sum(op.status == "info" for op in every) == 626 + 657
    assert sum(op.output is UNKNOWN and op.status == "ok" for op in every) == 17
    assert sum(op.f == "cas" and op.output is False for op in every) == 1748
    assert sum(op.f == "cas" and op.output is True for op in every) == 431
    assert histories["etcd_095.log"] == []
    first = histories["etcd_000.log"]
    assert (len(first), sum(op.status == "info" for op in first)) == (85, 16)
    assert [op.index for op in first] == list(range(85))
    assert (len(histories["etcd_102.log"]), sum(op.output is UNKNOWN and op.status == "ok"
                                                for op in histories["etcd_102.log"])) == (73, 7)


@needs_histories
@pytest.mark.parametrize(("name", "count", "keys"), [
    ("c01-ok.txt", 58, 10), ("c01-bad.txt", 38, 8), ("c10-ok.txt", 337, 10),
    ("c10-bad.txt", 405, 10), ("c50-ok.txt", 1712, 10), ("c50-bad.txt", 2024, 10),
])
def test_kv_files_parse_with_the_counts_of_the_readme(name, count, keys):
    ops = load_history(HISTORIES / "kv" / name, "porcupine-kv")
    assert len(ops) == count
    assert len({op.key for op in ops}) == keys
    assert all(op.status == "ok" for op in ops)


def test_load_history_errors_are_history_format_errors(tmp_path):
    with pytest.raises(HistoryFormatError, match="unknown history format"):
        load_history(tmp_path / "x.log", "edn")
    with pytest.raises(HistoryFormatError, match="cannot read history"):
        load_history(tmp_path / "missing.log", "jepsen-etcd")
    path = tmp_path / "bad.log"
    path.write_text(etcd_line(0, "invoke", "read", "nil") + "\n" + "INFO oops\n")
    with pytest.raises(HistoryFormatError) as caught:
        load_history(path, "jepsen-etcd")
    assert str(caught.value).startswith(f"{path}:2: ")


# -- our client's journal ----------------------------------------------------------------------


def record(phase, client, op_id, t, **fields):
    return {"type": "client-op", "phase": phase, "client": client, "op_id": op_id, "t": t, **fields}


def test_client_records_pair_by_client_and_op_id():
    ops = from_client_records([
        {"type": "leader-elected", "t": 0.0, "member": "etcd-1"},  # other records are ignored
        record("invoke", "c1", 1, 1.0, f="write", key="x", value=3),
        record("invoke", "c2", 1, 1.5, f="read", key="x", value=None),
        record("ok", "c2", 1, 2.0, f="read", key="x", output=3),
        record("ok", "c1", 1, 2.5, f="write", key="x", output=None),
        record("invoke", "c2", 2, 3.0, f="cas", key="x", value=[3, 4]),
        record("ok", "c2", 2, 4.0, f="cas", key="x", output=False),
        record("invoke", "c1", 2, 3.5, f="write", key="y", value=1),
        record("fail", "c1", 2, 3.6, f="write", key="y"),
        record("invoke", "c1", 3, 5.0, f="cas", key="y", value=[None, 1]),
        record("info", "c1", 3, 6.0, f="cas", key="y"),
        record("invoke", "c3", 1, 7.0, f="read", key="z"),  # never completed
        record("invoke", "c2", 3, 8.0, f="read", key="z"),
        record("ok", "c2", 3, 9.0, f="read", key="z", output=None),
    ])
    assert ops == [
        Op(0, "c1", "write", "x", 3, None, "ok", 1.0, 2.5),
        Op(1, "c2", "read", "x", None, 3, "ok", 1.5, 2.0),
        Op(2, "c2", "cas", "x", (3, 4), False, "ok", 3.0, 4.0),
        Op(3, "c1", "write", "y", 1, None, "fail", 3.5, 3.6),
        Op(4, "c1", "cas", "y", (None, 1), UNKNOWN, "info", 5.0, math.inf),
        Op(5, "c3", "read", "z", None, UNKNOWN, "info", 7.0, math.inf),
        Op(6, "c2", "read", "z", None, None, "ok", 8.0, 9.0),
    ]


@pytest.mark.parametrize(("records", "number", "words"), [
    ([record("ok", "c", 1, 1.0, f="read")], 1, "before its invocation"),
    ([record("invoke", "c", 1, 1.0, f="read"), record("invoke", "c", 1, 2.0, f="read")], 2,
     "twice"),
    ([record("invoke", "c", 1, 1.0, f="delete")], 1, "unknown operation"),
    ([record("invoke", "c", 1, 1.0, f="read"), record("done", "c", 1, 2.0)], 2, "unknown phase"),
    ([{"type": "client-op", "phase": "invoke"}], 1, "lacks"),
    ([record("invoke", "c", 1, 2.0, f="read"), record("ok", "c", 1, 1.0, output=None)], 2,
     "precedes"),
    ([record("invoke", "c", 1, 1.0, f="cas", value=[1]), record("ok", "c", 1, 2.0)], 1,
     "cas value"),
    ([record("invoke", "c", 1, 1.0, f="cas", value=[1, 2]), record("ok", "c", 1, 2.0, output=1)],
     2, "true/false"),
])
def test_client_records_errors(records, number, words):
    with pytest.raises(HistoryFormatError) as caught:
        from_client_records(records)
    assert str(caught.value).startswith(f"<journal>:{number}: ")
    assert words in str(caught.value)


# -- the record --------------------------------------------------------------------------------


def test_op_to_json_is_plain_json():
    op = Op(4, 2, "cas", None, (1, 2), UNKNOWN, "info", 3.0, math.inf)
    assert json.loads(json.dumps(op.to_json(), allow_nan=False)) == {
        "index": 4, "process": 2, "f": "cas", "key": None, "value": [1, 2],
        "output": "unknown", "status": "info", "call": 3.0, "ret": None,
    }


def test_unknown_is_a_singleton():
    assert copy.deepcopy(UNKNOWN) is UNKNOWN
    assert pickle.loads(pickle.dumps(UNKNOWN)) is UNKNOWN
    assert type(UNKNOWN)() is UNKNOWN
    assert repr(UNKNOWN) == "UNKNOWN"

"""The linearizability checker: published verdicts, stories, a brute-force oracle, evidence.

Expected verdicts are porcupine's (shared/peers/jepsen-histories/README.md), copied here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import combinations, permutations
from pathlib import Path

from tests.conftest import PEERS

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaoskube.checkers import linearizability
from chaoskube.checkers.history import UNKNOWN, Op, load_history
from chaoskube.checkers.linearizability import KVModel, RegisterModel, check_linearizability

HISTORIES = PEERS / "jepsen-histories"
# The peer data always sits beside the clone (../shared); missing data is an error, never a skip.
assert HISTORIES.is_dir(), f"peer histories missing: {HISTORIES}"
def needs_histories(test):  # kept as a marker of the tests that read ../shared
    return test

# etcd_NNN.log -> linearizable. etcd_095 is empty (the run's cluster never started): trivially
# linearizable; porcupine has no test for it.
EXPECTED_ETCD = {
    "000": False, "001": False, "002": True, "003": False, "004": False, "005": True, "006": False,
    "007": True, "008": False, "009": False, "010": False, "011": False, "012": False, "013": False,
    "014": False, "015": False, "016": False, "017": False, "018": True, "019": False, "020": False,
    "021": False, "022": False, "023": False, "024": False, "025": True, "026": False, "027": False,
    "028": False, "029": False, "030": False, "031": True, "032": False, "033": False, "034": False,
    "035": False, "036": False, "037": False, "038": True, "039": False, "040": False, "041": False,
    "042": False, "043": False, "044": False, "045": True, "046": False, "047": False, "048": True,
    "049": True, "050": False, "051": True, "052": False, "053": True, "054": False, "055": False,
    "056": True, "057": False, "058": False, "059": False, "060": False, "061": False, "062": False,
    "063": False, "064": False, "065": False, "066": False, "067": True, "068": False, "069": False,
    "070": False, "071": False, "072": False, "073": False, "074": False, "075": True, "076": True,
    "077": False, "078": False, "079": False, "080": True, "081": False, "082": False, "083": False,
    "084": False, "085": False, "086": False, "087": True, "088": False, "089": False, "090": False,
    "091": False, "092": True, "093": False, "094": False, "095": True, "096": False, "097": False,
    "098": True, "099": False, "100": True, "101": True, "102": True,
}
EXPECTED_KV = {
    "c01-ok.txt": True, "c01-bad.txt": False, "c10-ok.txt": True, "c10-bad.txt": False,
    "c50-ok.txt": True, "c50-bad.txt": False,
}


def test_the_table_is_the_readme_s():
    assert len(EXPECTED_ETCD) == 103
    assert sum(EXPECTED_ETCD.values()) == 23 + 1  # 23 linearizable, plus the empty file


@needs_histories
@pytest.mark.parametrize(("number", "expected"), sorted(EXPECTED_ETCD.items()))
def test_jepsen_etcd_history(number, expected):
    ops = load_history(HISTORIES / "etcd" / f"etcd_{number}.log", "jepsen-etcd")
    verdict = check_linearizability(ops, RegisterModel(), time_limit_s=60)
    assert verdict.valid is expected, verdict.reason
    assert verdict.details["ops"] == len(ops)
    assert verdict.details["partitions"] == (1 if ops else 0)
    if expected is False:
        count = len(verdict.evidence)
        assert verdict.reason == f"the register: {count} operations cannot be linearized"
        assert 0 < len(verdict.evidence) < len(ops)


@needs_histories
@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED_KV.items()))
def test_porcupine_kv_history(name, expected):
    ops = load_history(HISTORIES / "kv" / name, "porcupine-kv")
    verdict = check_linearizability(ops, KVModel(), time_limit_s=120)
    assert verdict.valid is expected, verdict.reason
    assert verdict.details["partitions"] == len({op.key for op in ops})
    if expected is False:
        assert verdict.reason.startswith("key '")
        assert len({op.key for op in verdict.evidence}) == 1


# -- stories -----------------------------------------------------------------------------------


def history(*specs: tuple) -> list[Op]:
    """Ops from (f, value, output, call, ret[, status[, key]]) tuples; ret None = open (info)."""
    ops = []
    for index, (f, value, output, call, ret, *rest) in enumerate(specs):
        status = rest[0] if rest else ("info" if ret is None else "ok")
        key = rest[1] if len(rest) > 1 else None
        if status == "info":
            output, ret = UNKNOWN, math.inf
        ops.append(Op(index, index, f, key, value, output, status, float(call), float(ret)))
    return ops


def valid(ops: list[Op], model=None) -> bool | None:
    return check_linearizability(ops, model or RegisterModel(), time_limit_s=None).valid


def test_read_concurrent_with_a_write_may_see_either_value():
    assert valid(history(("write", 1, None, 0, 3), ("read", None, 1, 1, 2))) is True
    assert valid(history(("write", 1, None, 0, 3), ("read", None, None, 1, 2))) is True


def test_stale_read_after_a_completed_write_is_caught():
    ops = history(("write", 1, None, 0, 1), ("write", 2, None, 2, 3), ("read", None, 1, 4, 5))
    verdict = check_linearizability(ops, RegisterModel())
    assert verdict.valid is False
    assert verdict.reason == "the register: 3 operations cannot be linearized"
    assert verdict.evidence == tuple(ops)


def test_read_of_a_value_never_written_is_caught():
    assert valid(history(("read", None, 7, 0, 1))) is False


def test_info_write_may_or_may_not_have_happened():
    write = ("write", 1, None, 0, None)  # timed out: open until the end
    assert valid(history(write, ("read", None, 1, 1, 2))) is True
    assert valid(history(write, ("read", None, None, 1, 2))) is True
    assert valid(history(write, ("read", None, None, 1, 2), ("read", None, 1, 3, 4))) is True
    # ... but once seen, it has happened: it cannot be undone.
    assert valid(history(write, ("read", None, 1, 1, 2), ("read", None, None, 3, 4))) is False


def test_info_op_takes_effect_only_after_its_invocation():
    assert valid(history(("read", None, 1, 0, 1), ("write", 1, None, 2, None))) is False
    assert valid(history(("read", None, 1, 0, 2), ("write", 1, None, 1, None))) is True


def test_failed_cas_is_an_observation():
    assert valid(history(("write", 1, None, 0, 1), ("cas", (1, 2), False, 2, 3))) is False
    assert valid(history(("write", 1, None, 0, 1), ("cas", (0, 2), False, 2, 3))) is True
    assert valid(history(("cas", (1, 2), False, 0, 1))) is True  # absent is not 1


def test_cas_success_moves_the_register():
    ops = history(("write", 1, None, 0, 1), ("cas", (1, 2), True, 2, 3), ("read", None, 2, 4, 5))
    assert valid(ops) is True
    assert valid(history(("cas", (1, 2), True, 0, 1))) is False


def test_info_cas_applies_only_if_the_compare_holds():
    ops = history(("write", 0, None, 0, 1), ("cas", (1, 2), None, 2, None), ("read", None, 2, 3, 4))
    assert valid(ops) is False
    ops = history(("write", 1, None, 0, 1), ("cas", (1, 2), None, 2, None), ("read", None, 2, 3, 4))
    assert valid(ops) is True


def test_failed_operations_are_dropped():
    ops = history(("write", 1, None, 0, 1, "fail"), ("read", None, 1, 2, 3))
    assert valid(ops) is False
    verdict = check_linearizability(ops, RegisterModel())
    assert verdict.details["ops"] == 1


def test_timed_out_read_is_consistent_with_anything():
    assert valid(history(("write", 1, None, 0, 1), ("read", None, UNKNOWN, 2, 3))) is True


def test_empty_history_is_linearizable():
    verdict = check_linearizability([], RegisterModel())
    assert (verdict.valid, verdict.details["ops"], verdict.details["partitions"]) == (True, 0, 0)


def test_keys_are_independent_registers():
    ops = history(("write", 1, None, 0, 1, "ok", "x"), ("read", None, None, 2, 3, "ok", "y"),
                  ("read", None, 1, 2, 3, "ok", "x"))
    verdict = check_linearizability(ops, RegisterModel())
    assert (verdict.valid, verdict.details["partitions"]) == (True, 2)
    ops = history(("write", 1, None, 0, 1, "ok", "x"), ("read", None, 1, 2, 3, "ok", "y"))
    verdict = check_linearizability(ops, RegisterModel())
    assert verdict.valid is False
    assert verdict.reason == "key 'y': 1 operations cannot be linearized"


def test_kv_append_and_get():
    ops = history(("append", "a", None, 0, 3, "ok", "k"), ("append", "b", None, 1, 4, "ok", "k"),
                  ("get", None, "ba", 5, 6, "ok", "k"), ("put", "z", None, 7, 8, "ok", "j"),
                  ("get", None, "z", 9, 10, "ok", "j"), ("get", None, "", 0, 1, "ok", "q"))
    assert valid(ops, KVModel()) is True
    ops = history(("append", "a", None, 0, 1, "ok", "k"), ("append", "b", None, 2, 3, "ok", "k"),
                  ("get", None, "ba", 5, 6, "ok", "k"))
    assert valid(ops, KVModel()) is False


@pytest.mark.parametrize(("state", "spec", "legal", "new"), [
    (None, ("read", None, None), True, None),
    (None, ("read", None, 0), False, None),
    (3, ("read", None, UNKNOWN), True, 3),
    (3, ("write", 4, None), True, 4),
    (3, ("write", 4, UNKNOWN), True, 4),
    (3, ("cas", (3, 4), True), True, 4),
    (2, ("cas", (3, 4), True), False, 4),
    (3, ("cas", (3, 4), False), False, 3),
    (None, ("cas", (3, 4), False), True, None),
    (3, ("cas", (3, 4), UNKNOWN), True, 4),
    (2, ("cas", (3, 4), UNKNOWN), True, 2),
])
def test_register_model_steps(state, spec, legal, new):
    f, value, output = spec
    op = Op(0, 0, f, None, value, output, "ok", 0.0, 1.0)
    got_legal, got_new = RegisterModel().step(state, op)
    assert got_legal is legal
    if legal:
        assert got_new == new


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([None, 0, 1, 2]), st.sampled_from(["read", "write", "cas"]), st.sampled_from([None, 0, 1]),
       st.sampled_from([None, 0, 1, 2]), st.sampled_from([None, 0, 1, 2, True, False, UNKNOWN]))
def test_register_reads_is_read_only_and_step_in_one_call(state, f, expected, value, output):
    """``reads`` (the greedy pass's one call per invocation) answers None exactly for the
    operations that are not read-only, and otherwise what ``step`` says of their legality."""
    argument = {"read": None, "write": value, "cas": (expected, value)}[f]
    op = Op(0, 0, f, None, argument, output if f != "cas" or output in (True, False, UNKNOWN) else UNKNOWN, "ok", 0.0, 1.0)
    model = RegisterModel()
    assert model.reads(state, op) == (model.step(state, op)[0] if model.read_only(op) else None)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["", "x", "x y"]), st.sampled_from(["get", "put", "append"]), st.sampled_from(["", "x", " y", "x y"]),
       st.sampled_from(["", "x", "x y", UNKNOWN]))
def test_kv_reads_is_read_only_and_step_in_one_call(state, f, value, output):
    op = Op(0, 0, f, "k", None if f == "get" else value, output if f == "get" else None, "ok", 0.0, 1.0)
    model = KVModel()
    assert model.reads(state, op) == (model.step(state, op)[0] if model.read_only(op) else None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="xy 12", max_size=4), max_size=6), st.text(alphabet="xy 12", max_size=8))
def test_kv_producers_match_the_suffix_rule(values, output):
    """A get can observe what the puts and appends so far can leave: "" or a string ending
    with one of their values (looked up by suffix length, not by trying every value)."""
    producers = KVModel().producers()
    for index, value in enumerate(values):
        producers.add(Op(index, 0, "append", "k", value, None, "ok", 0.0, 1.0))
    get = Op(len(values), 0, "get", "k", None, output, "ok", 0.0, 1.0)
    assert producers.can_produce(get) is (output == "" or any(output.endswith(value) for value in values))


# -- against a deliberately simple oracle ------------------------------------------------------


def brute_force(ops: list[Op], model) -> bool:
    """Try every order of the determinate operations plus every subset of the 'info' ones."""
    kept = [op for op in ops if op.status != "fail"]
    required = [op for op in kept if op.status == "ok"]
    optional = [op for op in kept if op.status == "info"]
    for size in range(len(optional) + 1):
        for subset in combinations(optional, size):
            for order in permutations(required + list(subset)):
                if respects_real_time(order) and legal_sequence(order, model):
                    return True
    return False


def respects_real_time(order) -> bool:
    return all(not later.ret < earlier.call
               for position, earlier in enumerate(order) for later in order[position + 1:])


def legal_sequence(order, model) -> bool:
    states: dict = {}
    for op in order:
        legal, states[op.key] = model.step(states.get(op.key, model.init()), op)
        if not legal:
            return False
    return True


@st.composite
def register_histories(draw, max_ops=7):
    """Histories drawn from a true sequential run (so often linearizable), then sometimes
    corrupted: each op gets a linearization point inside [call, ret]; outputs come from
    applying the ops in that order; 'info' ops may or may not take effect."""
    keys = draw(st.sampled_from([(None,), ("x", "y")]))
    specs = []
    for number in range(draw(st.integers(0, max_ops))):
        f = draw(st.sampled_from(["read", "write", "cas"]))
        value = {"read": None, "write": draw(st.integers(0, 2)),
                 "cas": (draw(st.sampled_from([None, 0, 1])), draw(st.integers(0, 2)))}[f]
        call = draw(st.integers(0, 12))
        length = draw(st.integers(0, 6))
        point = call + draw(st.integers(0, 2 * length)) / 2
        status = draw(st.sampled_from(["ok", "ok", "ok", "info", "fail"]))
        effect = status == "ok" or (status == "info" and draw(st.booleans()))
        specs.append([point, number, draw(st.sampled_from(keys)), f, value, call, call + length,
                      status, effect, draw(st.integers(0, 7)) == 0])
    states: dict = {}
    outputs = {}
    for point, number, key, f, value, *_rest, effect, _corrupt in sorted(specs):
        state = states.get(key)
        if f == "read":
            outputs[number] = state
        elif f == "cas":
            outputs[number] = state == value[0]
            if state == value[0] and effect:
                states[key] = value[1]
        elif effect:
            states[key] = value
    ops = []
    by_call = sorted(specs, key=lambda spec: (spec[5], spec[1]))
    for index, spec in enumerate(by_call):
        _point, number, key, f, value, call, ret, status, _effect, corrupt = spec
        output = outputs.get(number)
        if corrupt and f == "read":
            output = draw(st.sampled_from([None, 0, 1, 2, UNKNOWN]))
        elif corrupt and f == "cas":
            output = not output
        if status == "info":
            output, ret = UNKNOWN, math.inf
        elif status == "fail":
            output = None
        ops.append(Op(index, number, f, key, value, output, status, float(call), float(ret)))
    return ops


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(register_histories())
def test_register_checker_agrees_with_brute_force(ops):
    assert valid(ops) is brute_force(ops, RegisterModel())


@st.composite
def kv_histories(draw, max_ops=6):
    specs = []
    for _ in range(draw(st.integers(0, max_ops))):
        f = draw(st.sampled_from(["get", "put", "append"]))
        value = None if f == "get" else draw(st.sampled_from(["a", "b"]))
        output = draw(st.sampled_from(["", "a", "b", "ab", "ba", "aa"])) if f == "get" else None
        call = draw(st.integers(0, 8))
        ret = None if draw(st.integers(0, 5)) == 0 else call + draw(st.integers(0, 5))
        specs.append((f, value, output, call, ret, "info" if ret is None else "ok", "k"))
    specs.sort(key=lambda spec: spec[3])
    return history(*specs)


@settings(max_examples=300, deadline=None)
@given(kv_histories())
def test_kv_checker_agrees_with_brute_force(ops):
    assert valid(ops, KVModel()) is brute_force(ops, KVModel())


# -- evidence ----------------------------------------------------------------------------------


def assert_sound_and_one_minimal(ops: list[Op], model) -> tuple[Op, ...]:
    """The evidence is non-linearizable on its own and with its context (the other operations,
    weakened to 'may have happened any time after invocation, or never'); moving any one
    evidence operation to the context makes it linearizable."""
    verdict = check_linearizability(ops, model, time_limit_s=60)
    assert verdict.valid is False
    assert verdict.details["evidence_minimal"] is True
    evidence = list(verdict.evidence)
    assert all(op in ops for op in evidence)
    kept = [op for op in ops if op.status != "fail"]
    partition = next(part for part in model.partition(kept) if evidence[0] in part)
    again, context, minimal = linearizability._minimal_evidence(
        sorted(partition, key=lambda op: op.index), model, None)
    assert (again, minimal) == (evidence, True)
    by_index = {op.index: op for op in ops}
    for op in context:  # weakened copies of operations of the history, not in the evidence
        original = by_index[op.index]
        assert original not in evidence
        assert (op.f, op.key, op.value, op.call) == (original.f, original.key, original.value,
                                                      original.call)
        assert (op.status, op.output, op.ret) == ("info", UNKNOWN, math.inf)
    assert check_linearizability(evidence, model).valid is False
    assert check_linearizability(evidence + context, model).valid is False
    for op in evidence:
        rest = [other for other in evidence if other is not op]
        moved = [] if model.read_only(op) else [linearizability._weakened(op)]
        assert check_linearizability(rest + context + moved, model).valid is True, op
    return verdict.evidence


def test_evidence_of_a_stale_read():
    ops = history(("write", 1, None, 0, 1), ("read", None, 1, 2, 3), ("write", 2, None, 4, 5),
                  ("write", 3, None, 4, None), ("read", None, 1, 6, 7), ("read", None, 2, 8, 9))
    evidence = assert_sound_and_one_minimal(ops, RegisterModel())
    # Write 1 completed before write 2 began; write 2 completed; then 1 was seen again (a
    # read of the past, found without a search: the write that completed is the observation
    # before it). Which other ops are relevant is left to the context.
    assert [op.index for op in evidence] == [0, 2, 4]  # write 1 completed before write 2 began, then 1 was seen again


@needs_histories
@pytest.mark.parametrize("number", ["000", "026", "057", "099"])
def test_evidence_on_jepsen_histories(number):
    ops = load_history(HISTORIES / "etcd" / f"etcd_{number}.log", "jepsen-etcd")
    evidence = assert_sound_and_one_minimal(ops, RegisterModel())
    assert len(evidence) < 20


@needs_histories
def test_evidence_on_kv_history():
    ops = load_history(HISTORIES / "kv" / "c10-bad.txt", "porcupine-kv")
    assert_sound_and_one_minimal(ops, KVModel())


# -- the time limit ----------------------------------------------------------------------------


def adversarial(count: int) -> list[Op]:
    """``count`` concurrent writes of distinct values, and while they are all in flight reads
    of 0, then of 1, then of 0 again: every value read was written (no read of a value never
    written), and between any two reads a write of the second one's value may take effect
    (no read of the past), so nothing refutes it cheaply; but write 0 cannot take effect
    both before and after write 1, and the search must try the orders of the other writes
    before it can say no."""
    ops = [Op(index, index, "write", None, index, None, "ok", float(index), float(10 * count))
           for index in range(count)]
    for offset, value in enumerate((0, 1, 0)):
        call = count + 1 + 2 * offset
        ops.append(Op(count + offset, count + offset, "read", None, None, value, "ok", float(call), call + 1.0))
    return ops


def test_a_read_of_a_value_never_written_is_refuted_at_once_with_itself_as_evidence():
    """Issue 17's case: many concurrent writes and one read of a value none of them wrote
    (or wrote only after the read returned, a read of the future). No search: the read
    alone is the evidence, and the writes are dropped from its context (none wrote it)."""
    for late in (False, True):
        ops = adversarial(2000)[:-2]
        if late:  # the value is written, but only after the read returned
            ops[-1] = replace(ops[-1], output=-7)
            ops.append(Op(len(ops), len(ops), "write", None, -7, None, "ok", ops[-1].ret + 1, ops[-1].ret + 2))
        else:
            ops[-1] = replace(ops[-1], output=-1)
        verdict = check_linearizability(ops, RegisterModel(), time_limit_s=5)
        assert verdict.valid is False
        assert [op.index for op in verdict.evidence] == [2000]
        assert verdict.details["evidence_minimal"] is True and verdict.details["evidence_context_ops"] == 0
        assert verdict.details["check_seconds"] < 1.0


def test_time_limit_gives_unknown():
    verdict = check_linearizability(adversarial(2000), RegisterModel(), time_limit_s=0.001)
    assert verdict.valid is None
    assert "time limit" in verdict.reason
    assert verdict.details["check_seconds"] < 2


def test_no_time_limit_settles_small_adversarial_history():
    assert valid(adversarial(8)) is False


# -- bounds and the large-partition path -------------------------------------------------------


def test_a_long_single_register_is_searched_in_linear_memory(monkeypatch):
    """The search's sets are relative to its earliest pending operation, so a long history on
    one register (where the greedy pass gives up) is settled within the memory bound (with
    sets as long as the history, this one answered unknown at the bound below)."""
    monkeypatch.setattr(linearizability, "_SEARCH_BYTES_MAX", 64 * 2**20)
    rng = __import__("random").Random(5)
    ops, clock = [], [0.0] * 8
    value = None
    for index in range(20_000):
        client = rng.randrange(8)
        call = clock[client] + rng.random()
        ret = call + rng.random() * 3
        clock[client] = ret
        ops.append((call, ret, client))
    ops.sort()
    history = []
    for index, (call, ret, client) in enumerate(ops):  # each takes effect at its invocation
        if rng.random() < 0.5:
            history.append(Op(index, client, "read", None, None, value, "ok", call, ret))
        else:
            value = rng.randrange(4)
            history.append(Op(index, client, "write", None, value, None, "ok", call, ret))
    assert linearizability._greedy(history, RegisterModel()) is False  # the search decides
    verdict = check_linearizability(history, RegisterModel(), time_limit_s=None)
    assert verdict.valid is True, verdict.reason


@pytest.mark.parametrize("greedy_first", [True, False])
def test_an_operation_returning_before_its_invocation_is_refused(monkeypatch, greedy_first):
    monkeypatch.setattr(linearizability, "_GREEDY_FIRST", greedy_first)
    ops = [Op(0, 0, "get", "k", None, "ab", "ok", 3.0, 3.0), Op(1, 1, "append", "k", "b", None, "ok", 5.0, 3.0),
           Op(2, 2, "append", "k", "b", None, "ok", 3.0, 5.0)]
    with pytest.raises(ValueError, match="operation 1 returns before it is invoked"):
        check_linearizability(ops, KVModel())


def test_a_time_limit_passed_gives_unknown_even_when_the_greedy_pass_proves_it():
    ops = [Op(0, 0, "write", None, 1, None, "ok", 0.0, 1.0), Op(1, 1, "read", None, None, 1, "ok", 2.0, 3.0)]
    verdict = check_linearizability(ops, RegisterModel(), time_limit_s=0)
    assert verdict.valid is None and verdict.reason.startswith("time limit of 0 s hit")
    assert check_linearizability(ops, RegisterModel(), time_limit_s=10).valid is True


def test_memory_bound_gives_unknown(monkeypatch):
    monkeypatch.setattr(linearizability, "_SEARCH_BYTES_MAX", 10_000)
    verdict = check_linearizability(adversarial(200), RegisterModel(), time_limit_s=None)
    assert verdict.valid is None
    assert verdict.reason.startswith("memory bound of 0 MiB hit")


# -- issue 17: the greedy pass, the cheap refutations, the evidence's budget ------------------


def plain(part: list[Op], model) -> bool:
    """The search alone on one partition: no greedy pass, no refutation."""
    search = linearizability._search_steps(part, model, None, greedy=False)
    while True:
        try:
            next(search)
        except StopIteration as stop:
            return stop.value


def test_greedy_pass_proves_a_plain_history_without_the_search(monkeypatch):
    """A history with little contention is linearized by the greedy pass alone (the
    search is never started), writes that return in the other order than they took effect
    included."""
    ops = history(("write", 1, None, 0, 4), ("write", 2, None, 1, 3), ("read", None, 1, 5, 6),
                  ("cas", (1, 3), True, 7, 8), ("read", None, 3, 9, 10))
    assert linearizability._greedy(ops, RegisterModel()) is True

    def no_search(*args, **kwargs):
        raise AssertionError("the search ran")

    monkeypatch.setattr(linearizability, "_search_steps", no_search)
    assert valid(ops) is True


def test_greedy_pass_orders_concurrent_writes_by_the_cas_that_follows_them(monkeypatch):
    """Two overlapping writes, then a cas that expects the value of the one that returned
    first: it must take effect last. No read says so; the cas, the first state-changing
    operation invoked after both, does (``_others_first``). An 'info' write invoked in
    between does not hide it."""
    ops = history(("write", 2, None, 0, 2), ("write", 3, None, 1, 3), ("cas", (2, 0), True, 5, 6), ("read", None, 0, 7, 8))
    with_info = history(("write", 2, None, 0, 2), ("write", 3, None, 1, 3), ("write", 4, None, 4, None), ("cas", (2, 0), True, 5, 6),
                        ("read", None, 0, 7, 8))
    for case in (ops, with_info):
        assert linearizability._greedy(case, RegisterModel()) is True
    monkeypatch.setattr(linearizability, "_search_steps", lambda *args, **kwargs: pytest.fail("the search ran"))
    assert valid(ops) is True and valid(with_info) is True


def test_greedy_pass_gives_up_on_a_violation_and_the_search_decides():
    ops = history(("write", 1, None, 0, 1), ("write", 2, None, 2, 3), ("read", None, 1, 4, 5))
    assert linearizability._greedy(ops, RegisterModel()) is False
    assert valid(ops) is False


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(register_histories(max_ops=9))
def test_greedy_first_agrees_with_the_plain_search(ops):
    """The greedy pass and the refutations only ever shortcut the search: verdicts with them
    equal the verdicts of the plain search (and a True from the greedy pass alone is right)."""
    kept = [op for op in ops if op.status != "fail"]
    model = RegisterModel()
    assert valid(ops) is all(plain(part, model) for part in model.partition(kept))
    for part in model.partition(kept):
        if linearizability._greedy(part, model):
            assert plain(part, model) is True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(register_histories(max_ops=14), st.randoms(use_true_random=False))
def test_the_verdict_does_not_depend_on_the_order_of_the_operations(ops, rng):
    """check_linearizability skips sorting when the greedy pass proves every partition; its
    answer, reason and evidence are still those of the history in order."""
    shuffled = list(ops)
    rng.shuffle(shuffled)
    model = RegisterModel()
    ordered, given_shuffled = check_linearizability(ops, model), check_linearizability(shuffled, model)
    assert (given_shuffled.valid, given_shuffled.reason, given_shuffled.evidence) == (ordered.valid, ordered.reason, ordered.evidence)


@settings(max_examples=300, deadline=None)
@given(kv_histories(max_ops=7))
def test_kv_greedy_first_agrees_with_the_plain_search(ops):
    model = KVModel()
    for part in model.partition(ops):
        if linearizability._greedy(part, model):
            assert plain(part, model) is True
        refuted = linearizability._refuted(part, model)
        stale = linearizability._stale(part, model)
        if refuted is not None or stale is not None:
            assert plain(part, model) is False


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(register_histories(max_ops=12), st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5)), max_size=8), st.booleans())
def test_the_greedy_look_ahead_cursors_answer_as_a_scan_does(ops, steps, with_resets):
    """_Invocations (asked at positions that only move forward) gives what a scan of the
    window from that position would: the first determinate state-changing operation, the
    first that may reset the state."""
    model = RegisterModel()
    by_call = sorted((op for op in ops if op.status != "fail"), key=lambda op: op.call)
    resets = model.resets if with_resets else None
    invocations = linearizability._Invocations(by_call, model.read_only, resets)

    def scan(position, window, test):
        return next((index for index in range(position, min(position + window, len(by_call))) if test(by_call[index])), None)

    position = 0
    for forward, window in steps:
        position += forward
        assert invocations.next_change(position, window) == scan(position, window, lambda op: op.ret != math.inf and not model.read_only(op))
        assert invocations.next_reset(position, window) == scan(position, window, lambda op: not model.read_only(op) and (resets is None or resets(op)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(register_histories(max_ops=8))
def test_register_refutations_are_sound(ops):
    model = RegisterModel()
    kept = [op for op in ops if op.status != "fail"]
    for part in model.partition(kept):
        if linearizability._refuted(part, model) is not None or linearizability._stale(part, model) is not None:
            assert plain(part, model) is False


def test_a_read_of_the_past_is_refuted_without_a_search(monkeypatch):
    """A read that returns the value a completed write overwrote, after another read saw the
    new one, with no write that could take effect between the two reads."""
    broken = history(("write", 1, None, 0, 1), ("write", 2, None, 2, 3), ("read", None, 2, 4, 5),
                     ("read", None, 1, 6, 7))
    correct = history(("write", 1, None, 0, 1), ("write", 2, None, 2, 3), ("read", None, 2, 4, 5),
                      ("write", 1, None, 5.5, 6.5), ("read", None, 1, 6, 7))
    model = RegisterModel()
    earlier, later = linearizability._stale(broken, model)
    assert (earlier.index, later.index) == (2, 3)
    assert linearizability._stale(correct, model) is None
    calls = []
    original = linearizability._search_steps
    monkeypatch.setattr(linearizability, "_search_steps", lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    assert linearizability._first_violation([broken], model, None) == 0
    assert not calls  # the verdict: refuted before any search
    assert check_linearizability(broken, model).valid is False
    assert check_linearizability(correct, model).valid is True


def test_a_stale_get_is_refuted_and_a_get_after_a_put_is_not():
    model = KVModel()
    broken = history(("append", "a", None, 0, 1), ("get", None, "a", 2, 3), ("append", "b", None, 4, 5),
                     ("get", None, "ab", 6, 7), ("get", None, "a", 8, 9))
    correct = history(("append", "a", None, 0, 1), ("get", None, "a", 2, 3), ("append", "b", None, 4, 5),
                      ("get", None, "ab", 6, 7), ("put", "a", None, 7.5, 8.5), ("get", None, "a", 8, 9))
    assert linearizability._stale(broken, model) is not None
    assert check_linearizability(broken, model).valid is False
    assert linearizability._stale(correct, model) is None
    assert check_linearizability(correct, model).valid is True
    # A put between them whose value the stale get does not extend excuses nothing: the get
    # is refuted all the same, and its evidence is the pair (the put is context).
    through_a_put = history(("append", "a", None, 0, 1), ("get", None, "a", 2, 3), ("append", "b", None, 4, 5),
                            ("get", None, "ab", 6, 7), ("put", "x", None, 7.5, 8.5), ("get", None, "a", 8, 9))
    earlier, later = linearizability._stale(through_a_put, model)
    assert (earlier.index, later.index) == (3, 5)
    verdict = check_linearizability(through_a_put, model)
    assert verdict.valid is False and [op.index for op in verdict.evidence] == [3, 5] and verdict.details["evidence_minimal"] is True


def _stale_evidence_is_sound(ops: list[Op], model) -> None:
    """Where :func:`_stale` finds a pair, its evidence with its context (every other
    state-changing operation invoked by the later read's return, weakened) is not
    linearizable, and so neither is the partition."""
    kept = [op for op in ops if op.status != "fail"]
    for part in model.partition(kept):
        pair = linearizability._stale(part, model)
        if pair is None:
            continue
        evidence = linearizability._stale_evidence(part, model, *pair)
        chosen = {id(op) for op in evidence}
        context = [linearizability._weakened(op) if op.ret != math.inf else op for op in part
                   if id(op) not in chosen and not model.read_only(op) and op.call <= pair[1].ret]
        assert plain(sorted(evidence + context, key=lambda op: op.index), model) is False, (evidence, context)
        assert plain(part, model) is False


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(register_histories(max_ops=8))
def test_register_stale_evidence_is_sound(ops):
    _stale_evidence_is_sound(ops, RegisterModel())


@settings(max_examples=400, deadline=None)
@given(kv_histories(max_ops=7))
def test_kv_stale_evidence_is_sound(ops):
    _stale_evidence_is_sound(ops, KVModel())


def test_a_read_of_the_future_is_refuted_and_a_concurrent_one_is_not():
    model = RegisterModel()
    future = history(("read", None, 5, 0, 1), ("write", 5, None, 2, 3))
    concurrent = history(("read", None, 5, 0, 2), ("write", 5, None, 1, 3))
    assert linearizability._refuted(future, model) is not None
    assert check_linearizability(future, model).valid is False
    assert linearizability._refuted(concurrent, model) is None
    assert check_linearizability(concurrent, model).valid is True


def test_evidence_stops_at_its_step_budget_with_the_best_so_far(monkeypatch):
    monkeypatch.setattr(linearizability, "_EVIDENCE_TOTAL_SLICES", 1)
    ops = adversarial(12)
    verdict = check_linearizability(ops, RegisterModel(), time_limit_s=None)
    assert verdict.valid is False
    assert verdict.details["evidence_minimal"] is False
    assert verdict.details["evidence_status"].startswith("best so far (")
    # sound all the same: the evidence with its context is not linearizable
    assert check_linearizability(list(verdict.evidence), RegisterModel(), time_limit_s=None).valid is False

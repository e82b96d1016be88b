"""Linearizability checking of operation histories (pure; no I/O, no randomness).

:func:`check_linearizability` answers whether a history of :class:`~.history.Op` has a
linearization under a sequential model. It follows porcupine (github.com/anishathalye/
porcupine, ``checker.go``): partition the history by key (P-compositionality, Horn & Kroening
2015), then per partition a Wing & Gong / Lowe depth-first search over which operation takes
effect next, memoizing every (set of operations linearized, model state) already explored.

Reductions on top of porcupine, all exact (they never change the answer):

* **Read-only absorption.** An operation that never changes the state (a read, a failed cas,
  a get) and is legal in the current state is linearized at once, without branching: any
  linearization that places it later stays valid with it moved here, because every operation
  it would jump over was still pending, hence concurrent with it.
* **Lazy indeterminate operations.** An 'info' operation (open until the end) is only tried
  where it changes the state: linearizing it as a no-op is dominated by leaving it pending,
  and it may be left pending for ever (placed last, where its unknown output is always legal).
* **Interchangeable indeterminate operations.** Once invoked, two 'info' operations with the
  same f, key and argument are interchangeable, so only the earliest-invoked pending one of
  each such class is ever tried.
* **Dominance memo.** A configuration is skipped when one with the same determinate
  operations linearized and the same state was explored with a *subset* of its 'info'
  operations linearized (that one had every option this one has).
* **Partitions in turn.** Partitions are searched round-robin, a slice of steps at a time, and
  the first violation ends the check, as porcupine's parallel check does.
* **Greedy pass first.** Every partition is first walked once by a greedy just-in-time
  linearization (:func:`_greedy`, Lowe's JIT linearization without backtracking): success
  proves it linearizable at a fraction of the search's cost per operation; failure proves
  nothing and hands over. On the generated 100k history it settles 99 of 100 partitions.
* **Cheap refutations.** Partitions the greedy pass did not settle are scanned, before any
  search, for a read-only operation that observes what no operation invoked by the time it
  returned could produce (a value never written; one written only later, a read of the
  future): that operation alone refutes it (:func:`_refuted`, the model's ``producers``);
  then for a read of the past (:func:`_stale`: a later read that can reach neither what the
  last observation before it saw -- an earlier read, or a write or put that completed --
  nor the state of any reset that may take effect between the two; models ``observed``
  and ``reset_value``). Its evidence is the pair (with the resets that completed before
  it and that the later read could extend), no search needed.
* **Reachability.** The earliest-returning pending read-only operation must take effect
  among the operations invoked before it returns; when none of those may reset the state
  (model ``resets``), its observation must be reachable from the current state by the others
  (model ``may_reach``: a KV get must extend the current string), else the configuration is
  dead. Exact; it turned porcupine's kv ``c50-ok`` from 1.2 s into 0.02 s here.
* **Blind indeterminate writes.** An 'info' operation that replaces the state (model
  ``needs_observer``: a register's write or cas) is only tried right before an operation
  that observes the state (model ``observes``); any linearization can be normalized so, an
  overwritten 'info' write being left out.

Operation sets are bitsets (Python ints), kept short: determinate operations are numbered in
order of completion, and a configuration holds the earliest-completing pending one (every
one before it is linearized) and a bitset of the ones after it, relative to it; 'info'
operations have a bitset of their own. The candidates for the next linearization point are
precomputed per earliest pending operation in the same relative form. So the search costs
time and memory in proportion to the history's length, not its square (a single register
of 60,000 operations: 0.8 s; it was past the memory bound at 45,000).

Models are small classes: ``init()``, ``step(state, op) -> (legal, new_state)``, ``partition
(ops) -> list[list[Op]]``, and optionally ``read_only(op) -> bool`` (true only if ``step``
never changes the state for this operation), and the hooks of the reductions above
(``resets``, ``may_reach``, ``needs_observer``, ``observes``, ``producers``,
``drop_unobserved``), and ``reads(state, op) -> bool | None`` (None where ``read_only`` is
false, else ``step(state, op)[0]``: one call where the greedy pass would make two); each is
used only when the model has it. States must be hashable.

Evidence of a violation: a few determinate operations of one partition that cannot be
linearized even if every other operation took effect at any time after its invocation, or
never (see :func:`_minimal_evidence` for why not simply "a subset that is not linearizable").
It starts from a cheap refutation when there is one, else from where the search got stuck
(porcupine's way: the operation no explored linearization got past), and grows and then
shrinks a window of operations around it; context operations nothing can observe are
dropped (model ``drop_unobserved``).

Non-guarantees: the answer is None (unknown) when the time limit is hit. The evidence is *a*
1-minimal explanation, not the smallest one; it has its own time limit
(``evidence_time_limit_s``, within the check's), each of its searches is bounded in steps,
all of them together by _EVIDENCE_TOTAL_SLICES, and at most _EVIDENCE_EXHAUSTED_MAX may
exhaust their bound; when a bound stops it the evidence is
the best so far (sound, not known 1-minimal), and ``details['evidence_status']`` says which.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left, bisect_right
from collections.abc import Generator, Sequence
from dataclasses import replace
from operator import attrgetter
from time import perf_counter
from typing import Any, Protocol

from chaoskube.checkers.history import UNKNOWN, Op
from chaoskube.checkers.verdict import Verdict

__all__ = ["KVModel", "Model", "RegisterModel", "check_linearizability"]

_STEPS_PER_SLICE = 512  # search steps per turn; the wall clock is read between turns
# Bound on each search made while minimizing evidence (25,600 steps, some 25 ms): one that
# does not settle counts as "cannot shrink" -- the evidence stays sound, maybe not 1-minimal.
# Counted in steps, not seconds, so that the evidence does not depend on the machine's load.
_EVIDENCE_SLICES = 50
# Searches of the evidence that may exhaust that bound before the evidence is reported as it
# stands (best so far): each costs 25,600 steps and proves nothing.
_EVIDENCE_EXHAUSTED_MAX = 1
# Slices of search the whole evidence may use (a deterministic bound: 102,400 steps):
# the evidence should not cost much more than a verdict does.
_EVIDENCE_TOTAL_SLICES = 200
#: The evidence's own time limit by default, in seconds (check_linearizability).
EVIDENCE_TIME_LIMIT_S = 10.0
# Bound on the memory of one partition's search: each explored configuration keeps about three
# bitsets as long as its 'info' operations plus its window of concurrent determinate ones
# (porcupine's are as long as the partition, so its memory grows with the square of the
# length). At the bound the answer is unknown rather than the machine running out.
_SEARCH_BYTES_MAX = 512 * 2**20
# Whether each search starts with the greedy just-in-time pass (:func:`_greedy`); tests turn
# it off to compare against the plain search.
_GREEDY_FIRST = True
# The most pending state-changing operations the greedy pass weighs placing before the one
# returning (more means contention, where the search does better than a guess).
_GREEDY_GROUP_MAX = 8
# The longest sequence of pending operations, and the most model steps, the greedy pass tries
# to make an illegal operation legal (:func:`_bridge`).
_BRIDGE_DEPTH = 4
_BRIDGE_NODES = 64


class Model(Protocol):
    def init(self) -> Any: ...

    def step(self, state: Any, op: Op) -> tuple[bool, Any]: ...

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]: ...


def _partition_by_key(ops: Sequence[Op]) -> list[list[Op]]:
    try:
        if len(set(map(_KEY, ops))) <= 1:  # one key (a file per key, or the single register)
            return [list(ops)] if ops else []
    except TypeError:  # an unhashable key: the dict below raises as before
        pass
    groups: dict[Any, list[Op]] = {}
    for op in ops:
        groups.setdefault(op.key, []).append(op)
    return list(groups.values())  # in order of each key's first operation


class RegisterModel:
    """A register per key (key None is one register), initially absent (None).

    read -> v: legal iff state == v (None = absent); UNKNOWN output: always legal.
    write(v): new state v. cas((a, b)) -> True: legal iff state == a, new state b;
    -> False: legal iff state != a, unchanged; -> UNKNOWN: always legal, b if state == a.
    """

    def init(self) -> Any:
        return None

    def step(self, state: Any, op: Op) -> tuple[bool, Any]:
        f, output = op.f, op.output
        if f == "read":
            return (output is UNKNOWN or state == output), state
        if f == "write":
            return True, op.value
        if f == "cas":
            expected, new = op.value
            if output is UNKNOWN:
                return True, (new if state == expected else state)
            if output is True:
                return state == expected, new
            assert output is False, op
            return state != expected, state
        raise ValueError(f"RegisterModel cannot apply {f!r} (operation {op.index})")

    def read_only(self, op: Op) -> bool:
        return op.f == "read" or (op.f == "cas" and op.output is False)

    def reads(self, state: Any, op: Op) -> bool | None:
        """None when ``op`` may change the state (not ``read_only``); else whether it is
        legal in ``state`` (``step(state, op)[0]``), in one call."""
        f = op.f
        if f == "read":
            output = op.output
            return output is UNKNOWN or state == output
        if f == "cas" and op.output is False:
            expected, _new = op.value
            return state != expected
        return None

    def resets(self, op: Op) -> bool:
        """Whether ``op`` may change the state (a write; a cas that may swap)."""
        return op.f == "write" or (op.f == "cas" and op.output is not False)

    def reset_value(self, op: Op) -> Any:
        """The state a reset ``op`` leaves when it takes effect (and swaps): a write's value,
        a cas's new value."""
        return op.value if op.f == "write" else op.value[1]

    def needs_observer(self, op: Op) -> bool:
        """Whether ``op``'s effect matters only to an operation right after it that
        observes the state (a write or a cas replaces the whole state)."""
        return op.f in ("write", "cas")

    def observes(self, op: Op) -> bool:
        """Whether ``op``'s legality or effect depends on the state."""
        return op.f in ("read", "cas")

    def may_reach(self, state: Any, op: Op) -> bool:
        """Whether read-only ``op`` can be legal after ``state`` and only operations that
        do not reset it (for a register: none change it)."""
        return self.step(state, op)[0]

    def observed(self, op: Op) -> Any:
        """The state a determinate read-only ``op`` saw (a read's value), or _MISSING when
        it does not say (a failed cas: only "not this value")."""
        return op.output if op.f == "read" and op.output is not UNKNOWN else _MISSING

    def producers(self) -> _RegisterProducers:
        return _RegisterProducers()

    def drop_unobserved(self, evidence: Sequence[Op], context: Sequence[Op]) -> list[Op]:
        """``context`` without the operations whose effect nothing can observe: a write (or a
        cas's new value) that no read of the evidence returns and no cas expects. Dropping
        one keeps ``evidence + context`` non-linearizable: in a linearization that used it,
        no operation saw its value, and the indeterminate operations that ran while it held
        had no effect, so both can go. A failed cas observes "not this value", which a
        dropped write could change: with one in the evidence, nothing is dropped."""
        if any(op.f == "cas" and op.output is False for op in evidence):
            return list(context)
        observed: set[Any] = set()
        for op in evidence:
            if op.f == "read" and _hashable_in(op.output, observed) is None:
                return list(context)
            if op.f == "read":
                observed.add(op.output)
        for op in (*evidence, *context):
            if op.f == "cas":
                if _hashable_in(op.value[0], observed) is None:
                    return list(context)
                observed.add(op.value[0])
        kept = []
        for op in context:
            written = op.value if op.f == "write" else op.value[1] if op.f == "cas" else _MISSING
            if written is _MISSING or _hashable_in(written, observed) is not False:
                kept.append(op)
        return kept

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return _partition_by_key(ops)


class KVModel:
    """A map from keys to strings, every key initially "". Checked one key at a time: the
    state is the string held by the partition's key.

    get -> v: legal iff state == v (UNKNOWN: always); put(v): state v; append(v): state + v.
    """

    def init(self) -> Any:
        return ""

    def step(self, state: Any, op: Op) -> tuple[bool, Any]:
        f = op.f
        if f == "get":
            return (op.output is UNKNOWN or state == op.output), state
        if f == "put":
            return True, op.value
        if f == "append":
            return True, state + op.value
        raise ValueError(f"KVModel cannot apply {f!r} (operation {op.index})")

    def read_only(self, op: Op) -> bool:
        return op.f == "get"

    def reads(self, state: Any, op: Op) -> bool | None:
        """None when ``op`` may change the state (not a get); else whether it is legal in
        ``state``."""
        if op.f == "get":
            output = op.output
            return output is UNKNOWN or state == output
        return None

    def resets(self, op: Op) -> bool:
        """Whether ``op`` may set the state to something that does not extend it (a put)."""
        return op.f == "put"

    def reset_value(self, op: Op) -> Any:
        """The state a put leaves: its value."""
        return op.value

    def may_reach(self, state: Any, op: Op) -> bool:
        """Whether get ``op`` can be legal after ``state`` and appends only: its output
        extends the state."""
        return op.output is UNKNOWN or (isinstance(op.output, str) and op.output.startswith(state))

    def observed(self, op: Op) -> Any:
        """The string a determinate get saw, or _MISSING."""
        return op.output if op.f == "get" and isinstance(op.output, str) else _MISSING

    def producers(self) -> _KVProducers:
        return _KVProducers()

    def drop_unobserved(self, evidence: Sequence[Op], context: Sequence[Op]) -> list[Op]:
        """``context`` without the puts no get of the evidence starts with and the appends
        no get contains: while such an operation's value is in the state (until the next
        put), no get is linearized, so a linearization that used it works without it."""
        outputs = [op.output for op in evidence if op.f == "get" and isinstance(op.output, str)]
        kept = []
        for op in context:
            value = op.value
            if not isinstance(value, str):
                kept.append(op)
            elif op.f == "put" and any(output.startswith(value) for output in outputs):
                kept.append(op)
            elif op.f == "append" and value and any(value in output for output in outputs):
                kept.append(op)
            elif op.f not in ("put", "append"):
                kept.append(op)
        return kept

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return _partition_by_key(ops)


def _hashable_in(value: Any, values: set[Any]) -> bool | None:
    """``value in values``; None when ``value`` cannot be hashed (so: keep it)."""
    try:
        return value in values
    except TypeError:
        return None


class _RegisterProducers:
    """What the writes seen so far can leave in a register: the initial None and every
    value written (a cas's new value included). ``can_produce(op)``: whether read-only
    ``op`` can observe one of them -- if not, ``op`` alone refutes the history."""

    def __init__(self) -> None:
        self.values: set[Any] = {None}
        self.unhashable = False

    def add(self, op: Op) -> None:
        value = op.value if op.f == "write" else op.value[1] if op.f == "cas" else _MISSING
        if value is _MISSING:
            return
        try:
            self.values.add(value)
        except TypeError:
            self.unhashable = True

    def can_produce(self, op: Op) -> bool:
        if op.output is UNKNOWN or self.unhashable:
            return True
        if op.f == "read":
            return _hashable_in(op.output, self.values) is not False
        if op.f == "cas" and op.output is False:  # observes "not the expected value"
            return len(self.values) > 1 or _hashable_in(op.value[0], self.values) is False
        return True


class _KVProducers:
    """What the puts and appends seen so far can leave in a key: "" or a string ending
    with one of their values. ``can_produce(get)``: whether its output is one of those."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.lengths: set[int] = set()  # of the values: a suffix of each length is looked up
        self.any = False  # a value that is not a string: give up refuting

    def add(self, op: Op) -> None:
        if op.f in ("put", "append"):
            if isinstance(op.value, str):
                self.values.add(op.value)
                self.lengths.add(len(op.value))
            else:
                self.any = True

    def can_produce(self, op: Op) -> bool:
        output = op.output
        if op.f != "get" or output is UNKNOWN or self.any or output == "":
            return True
        if not isinstance(output, str):
            return False
        values = self.values
        if "" in values:
            return True  # every string ends with ""
        size = len(output)
        return any(output[-length:] in values for length in self.lengths if length <= size)


class _OutOfTime(Exception):
    pass


class _OutOfSteps(Exception):
    pass


class _OutOfMemory(Exception):
    pass


_MISSING = object()
_ILLEGAL = object()
_BY_CALL = attrgetter("call", "index")
_BY_RETURN = attrgetter("ret", "call", "index")
_BY_INDEX = attrgetter("index")
_KEY = attrgetter("key")
_CALL = attrgetter("call")
_RET = attrgetter("ret")
_STATUS = attrgetter("status")


def _search(ops: Sequence[Op], model: Any, deadline: float | None,
            max_slices: int | None = None, stuck: dict[str, Any] | None = None) -> bool | None:
    """Whether ``ops`` (one partition, no 'fail' operations) is linearizable; None when
    ``max_slices`` slices of _STEPS_PER_SLICE steps did not settle it. On False,
    ``stuck["op"]`` is where the search got stuck (see :func:`_first_violation`).

    Raises _OutOfTime past ``deadline`` (a perf_counter() value, or None for no limit).
    """
    try:
        return _first_violation([ops], model, deadline, max_slices, stuck) is None
    except (_OutOfSteps, _OutOfMemory):
        return None


def _first_violation(partitions: Sequence[Sequence[Op]], model: Any, deadline: float | None,
                     max_slices: int | None = None, stuck: dict[str, Any] | None = None,
                     greedy: Sequence[bool] = ()) -> int | None:
    """The position of a non-linearizable partition, or None if all are linearizable.

    The searches run round-robin, a slice of steps each in turn, and the first to answer False
    ends the check -- as porcupine runs partitions in parallel and stops at the first
    violation -- so one hard partition cannot hide an easy violation in another.
    Raises _OutOfTime past ``deadline``, _OutOfSteps after ``max_slices`` turns, and
    _OutOfMemory when a search would pass _SEARCH_BYTES_MAX.

    A partition that is not linearizable is refuted at once when one of its read-only
    operations observes what no operation invoked before it returned could have produced
    (a value never written, or written only later: :func:`_refuted`). On a violation,
    ``stuck["op"]`` (when given) is the determinate operation that no explored
    linearization got past: the earliest-returning one still pending in the deepest
    configuration (porcupine reports the longest partial linearizations the same way).
    A cheap refutation is also left in ``stuck["refutation"]``: ``("refuted", op)`` or
    ``("stale", (earlier, later))``. ``greedy``: the greedy pass's answers for the first
    partitions when the caller already has them (for the same partitions, in this order).
    """
    frontiers: list[dict[str, Any]] = [{} for _ in partitions]
    # 1. The greedy pass (linear): it proves most partitions of a correct history at once.
    # 2. A partition it leaves is tried at once for a cheap refutation (n log n) -- a read of
    # a value never written or written only later, then a read of the past -- so a violation
    # found so ends the check before the partitions after it are walked (the same one is
    # reported: every partition before it was proved or not refuted).
    known = len(greedy)
    hard = []
    for position, part in enumerate(partitions):
        if _GREEDY_FIRST and (greedy[position] if position < known else _greedy(part, model)):
            continue
        refutation = _refutation(part, model)
        if refutation is None:
            hard.append(position)
            continue
        if deadline is not None and perf_counter() > deadline:
            raise _OutOfTime
        if stuck is not None:
            kind, found = refutation
            stuck["op"] = found if kind == "refuted" else found[1]
            stuck["refutation"] = refutation
        return position
    if deadline is not None and perf_counter() > deadline:
        raise _OutOfTime
    # 3. The searches, round-robin.
    active = [(position, _search_steps(partitions[position], model, frontiers[position], greedy=False)) for position in hard]
    turns = 0
    while active:
        turns += 1
        if stuck is not None:
            stuck["turns"] = turns  # slices used so far (the evidence's budget counts them)
        if max_slices is not None and turns > max_slices:
            raise _OutOfSteps
        still = []
        for position, search in active:
            try:
                next(search)
            except StopIteration as stop:
                if not stop.value:
                    if stuck is not None:
                        stuck["op"] = frontiers[position].get("op")
                    return position
                continue
            still.append((position, search))
        active = still
        if deadline is not None and perf_counter() > deadline:
            raise _OutOfTime
    return None


#: How many possible resets :func:`_stale` weighs between one pair of observations before it
#: leaves that pair (sound: the scan may miss a stale read, never invent one).
_STALE_WINDOW_MAX = 256


def _refutation(ops: Sequence[Op], model: Any) -> tuple[str, Any] | None:
    """The cheap refutation of ``ops`` (one partition), if any: ``("refuted", op)``
    (:func:`_refuted`), else ``("stale", (earlier, later))`` (:func:`_stale`)."""
    refuted = _refuted(ops, model)
    if refuted is not None:
        return "refuted", refuted
    pair = _stale(ops, model)
    return None if pair is None else ("stale", pair)


def _stale(ops: Sequence[Op], model: Any) -> tuple[Op, Op] | None:
    """A read of the past in ``ops`` (one partition): ``(earlier, later)`` where ``later`` is
    a determinate read-only operation, ``earlier`` a determinate observation of the state
    that returned before ``later`` was invoked -- a read (model ``observed``) or, where the
    model has ``reset_value``, a reset that completed (a write, a put, a cas that swapped:
    the state it left) -- and ``later`` can be legal neither after ``earlier``'s state and
    operations that do not reset it (model ``may_reach``) nor after any reset that may take
    effect between the two (invoked by ``later``'s return and returning after ``earlier``'s
    invocation) and the same: a stale read. Without ``reset_value``, any such reset excuses
    the pair. ``earlier`` is the latest-returning observation before ``later``, and at most
    _STALE_WINDOW_MAX resets are weighed per pair (an incomplete scan, so sound: it may miss a
    stale pair, never invent one). None when there is none or the model lacks the hooks."""
    read_only = getattr(model, "read_only", None)
    observed = getattr(model, "observed", None)
    resets = getattr(model, "resets", None)
    may_reach = getattr(model, "may_reach", None)
    reset_value = getattr(model, "reset_value", None)
    if read_only is None or observed is None or resets is None or may_reach is None:
        return None
    reads, observations, determinate, indeterminate = [], [], [], []
    for op in ops:
        if read_only(op):
            if op.ret != math.inf and op.output is not UNKNOWN:
                reads.append(op)
                state = observed(op)
                if state is not _MISSING:
                    observations.append((op, state))
        elif resets(op):
            if op.ret == math.inf:
                indeterminate.append(op)
            else:
                determinate.append(op)
                if reset_value is not None:
                    observations.append((op, reset_value(op)))
    determinate.sort(key=_CALL)
    indeterminate.sort(key=_CALL)
    calls = [op.call for op in determinate]
    open_calls = [op.call for op in indeterminate]
    latest_ret = []  # latest_ret[i]: the latest return among determinate[:i + 1]
    latest = -math.inf
    for op in determinate:
        latest = max(latest, op.ret)
        latest_ret.append(latest)
    observations.sort(key=lambda pair: pair[0].ret)
    position, earlier, seen = 0, None, _MISSING
    for later in sorted(reads, key=_CALL):
        while position < len(observations) and observations[position][0].ret < later.call:
            earlier, seen = observations[position]
            position += 1
        if earlier is None or may_reach(seen, later):
            continue
        count = bisect_right(calls, later.ret)
        if not (count and latest_ret[count - 1] >= earlier.call) and not bisect_right(open_calls, later.ret):
            return earlier, later  # no reset can take effect between them
        if reset_value is None:
            continue  # a reset may take effect between them
        if not _excused(determinate, latest_ret, count, indeterminate, bisect_right(open_calls, later.ret), earlier, later, may_reach, reset_value):
            return earlier, later
    return None


def _excused(determinate: list[Op], latest_ret: list[float], count: int, indeterminate: list[Op], open_count: int,
             earlier: Op, later: Op, may_reach: Any, reset_value: Any) -> bool:
    """For :func:`_stale`: whether a reset that may take effect between ``earlier`` and
    ``later`` leaves a state ``later`` can reach -- one of ``indeterminate[:open_count]``,
    or of ``determinate[:count]`` (by call) returning after ``earlier``'s invocation, most
    recent first; ``earlier`` itself aside -- or there are more than _STALE_WINDOW_MAX of
    either to weigh (the pair is then left alone: sound). The open resets are asked first,
    then the completed ones, and the first that excuses the pair ends it."""
    if open_count > _STALE_WINDOW_MAX:
        return True
    completed = []
    for scanned, i in enumerate(range(count - 1, -1, -1), start=1):
        if latest_ret[i] < earlier.call:
            break  # nothing at or before i returns after earlier's invocation
        if scanned > _STALE_WINDOW_MAX:
            return True
        op = determinate[i]
        if op.ret >= earlier.call and op is not earlier:
            completed.append(op)
    return (any(may_reach(reset_value(op), later) for op in indeterminate[:open_count] if op is not earlier)
            or any(may_reach(reset_value(op), later) for op in completed))


def _stale_evidence(ops: Sequence[Op], model: Any, earlier: Op, later: Op) -> list[Op]:
    """Determinate operations of a stale pair's proof (:func:`_stale`): the pair, and each
    determinate reset that returned before ``earlier`` was invoked and whose state ``later``
    could extend (weakened into the context, such a reset could take effect between the
    two; kept determinate, it cannot). With every other state-changing operation weakened,
    the last reset before ``later`` is one whose state ``later`` cannot reach, or none after
    ``earlier``: not linearizable."""
    resets, may_reach, reset_value = model.resets, model.may_reach, getattr(model, "reset_value", None)
    kept = [earlier, later]
    if reset_value is not None:
        kept += [op for op in ops if op is not earlier and op.ret < earlier.call and not model.read_only(op) and resets(op)
                 and may_reach(reset_value(op), later)]
    return sorted(kept, key=_BY_INDEX)


def _refuted(ops: Sequence[Op], model: Any) -> Op | None:
    """The earliest-returning determinate read-only operation of ``ops`` (one partition)
    that observes what none of the state-changing operations invoked by the time it returned
    can produce (``model.producers()``), if any: on its own it cannot be linearized, and
    no other operation can help it. None when the model has no producers."""
    producers_of = getattr(model, "producers", None)
    read_only = getattr(model, "read_only", None)
    if producers_of is None or read_only is None:
        return None
    writers, checks = [], []
    for op in ops:
        if not read_only(op):
            writers.append(op)
        elif op.ret != math.inf:
            checks.append(op)
    writers.sort(key=_BY_CALL)
    checks.sort(key=_BY_RETURN)
    producers = producers_of()
    position = 0
    for op in checks:
        while position < len(writers) and writers[position].call <= op.ret:
            producers.add(writers[position])
            position += 1
        if not producers.can_produce(op):
            return op
    return None


def _greedy(ops: Sequence[Op], model: Any) -> bool:
    """Whether a greedy just-in-time linearization of ``ops`` (one partition) succeeds: True
    proves ``ops`` linearizable; False proves nothing (the search then decides).

    Lowe's just-in-time linearization without backtracking: the operations are walked in
    order of return; an operation is linearized only when it must be, at its return, after
    every read-only operation legal in the current state (absorption, exact as in the
    search); if it is illegal there, after one pending state-changing operation that makes it
    legal (the earliest-invoked such, a determinate one before an 'info' one); and a
    state-changing one after the determinate state-changing operations still pending when
    the next read-only operations say so (:func:`_others_first`). Every operation so placed
    was invoked by then and every one after it returns later, so a walk that reaches the end
    is a linearization (pending 'info' operations left out). One step of the model per
    operation and absorption, no memo, no stack: on the common history (little contention
    per key) it is the whole check, at a fraction of the search's cost per operation; where
    it guesses wrong it gives up at once.
    """
    read_only = getattr(model, "read_only", None)
    step = model.step
    resets, may_reach = getattr(model, "resets", None), getattr(model, "may_reach", None)
    reach = None if read_only is None or resets is None or may_reach is None else (read_only, resets, may_reach)
    # (ties in any order: each order of equal times is as valid a walk as another)
    by_call = sorted(ops, key=_CALL)
    by_return = sorted(ops, key=_RET)
    del by_return[bisect_left(by_return, math.inf, key=_RET):]  # 'info' ones never return
    state = model.init()
    readers: dict[int, Op] = {}  # pending determinate read-only operations, by index
    writers: dict[int, Op] = {}  # pending determinate state-changing operations
    blind: dict[int, Op] = {}  # invoked 'info' state-changing operations not linearized
    done: set[int] = set()  # determinate operations linearized before their return
    position, count = 0, len(by_call)
    reads = _reads_of(model)
    invocations: _Invocations | None = None
    # Invariant between returns: no pending reader is legal in the current state (each is
    # tried on invocation and again at every change of state).
    inf = math.inf
    next_call = by_call[0].call if count else inf
    for turn, op in enumerate(by_return):
        ret = op.ret
        while next_call <= ret:
            invoked = by_call[position]
            position += 1
            next_call = by_call[position].call if position < count else inf
            legal = reads(state, invoked)
            if legal is None:  # it may change the state
                if invoked.ret != inf:
                    writers[invoked.index] = invoked
                else:
                    blind[invoked.index] = invoked
            elif invoked.ret == inf:  # an 'info' read-only operation is left out
                continue
            elif legal:  # absorbed at once
                done.add(invoked.index)
            else:
                readers[invoked.index] = invoked
        index = op.index
        if index in done:
            done.discard(index)
            continue
        writer = readers.pop(index, None) is None
        if writer:
            if writers.pop(index, None) is None:  # never invoked by its return
                raise ValueError(f"operation {index} returns before it is invoked: {op}")
        legal, new = step(state, op)
        if legal and writer and writers and len(writers) <= _GREEDY_GROUP_MAX:
            # Other state-changing operations still pending may belong before this one
            # (they return later but took effect earlier).
            group = sorted(writers.values(), key=_BY_RETURN)
            if invocations is None:  # (the look-ahead's cursors, made when first needed)
                invocations = _Invocations(by_call, read_only, None if reach is None else resets)
            if reach is not None:  # some of them, by the next observation that follows
                following = _next_observer(reach, new, by_return, turn + 1, invocations, position, done)
                if following is not None:
                    bridge = _bridge(step, reach, state, op, group, following)
                    if bridge:
                        group = bridge
            if (len(group) < len(writers) or
                    _others_first(step, read_only, reach, state, new, group, by_return, turn + 1, invocations, position, done)):
                for other in group:
                    state = step(state, other)[1]
                    del writers[other.index]
                    done.add(other.index)
                    if readers:
                        _drain_legal_readers(reads, state, readers, done)
                legal, new = step(state, op)
                assert legal, op
        if not legal:
            bridge = _bridge(step, reach, state, op, [*writers.values(), *blind.values()])
            if bridge is None:
                return False
            for other in bridge:
                state = step(state, other)[1]
                if other.ret != inf:
                    del writers[other.index]
                    done.add(other.index)
                else:
                    del blind[other.index]
                if readers:  # what the intermediate state makes legal goes first
                    _drain_legal_readers(reads, state, readers, done)
            legal, new = step(state, op)
            assert legal, op
        if new is not state and new != state:
            state = new
            if readers:
                _drain_legal_readers(reads, state, readers, done)
    return True


def _reads_of(model: Any) -> Any:
    """``model.reads(state, op)``: None when ``op`` may change the state, else whether it is
    legal in ``state``; made of ``read_only`` and ``step`` when the model has no ``reads``."""
    reads = getattr(model, "reads", None)
    if reads is not None:
        return reads
    read_only, step = getattr(model, "read_only", None), model.step
    if read_only is None:
        return lambda state, op: None
    return lambda state, op: step(state, op)[0] if read_only(op) else None


def _drain_legal_readers(reads: Any, state: Any, readers: dict[int, Op], done: set[int]) -> None:
    """For :func:`_greedy`: linearize now, at ``state``, every pending read-only operation
    that ``state`` makes legal (a read cannot change the state, so the order among them
    does not matter)."""
    for reader in list(readers.values()):
        if reads(state, reader):
            del readers[reader.index]
            done.add(reader.index)


class _Invocations:
    """For :func:`_greedy`'s look-ahead: in the operations in order of invocation
    (``by_call``), from a position that only moves forward, the next determinate
    state-changing one and the next one that may reset the state (model ``resets``; without
    it, any state-changing one), each within a window. Each is found by a cursor that never
    moves back, so an operation is asked ``read_only`` and ``resets`` about once per
    partition rather than once per question (a 64-wide scan each: a quarter of a key-value
    check's time). The two scans are written out apart: one loop testing which question it
    answers cost 2 % on the sets of short histories."""

    __slots__ = ("by_call", "read_only", "resets", "_change", "_reset")

    def __init__(self, by_call: list[Op], read_only: Any, resets: Any) -> None:
        self.by_call, self.read_only, self.resets = by_call, read_only, resets
        self._change = self._reset = 0  # no match before these, at or after any position asked

    def next_change(self, position: int, window: int) -> int | None:
        """The index of the first determinate state-changing operation in
        ``by_call[position:position + window]``, or None."""
        by_call, read_only = self.by_call, self.read_only
        index, end = max(self._change, position), min(position + window, len(by_call))
        while index < end and (by_call[index].ret == math.inf or (read_only is not None and read_only(by_call[index]))):
            index += 1
        self._change = index
        return index if index < end else None

    def next_reset(self, position: int, window: int) -> int | None:
        """The index of the first operation that may reset the state in
        ``by_call[position:position + window]``, or None."""
        by_call, read_only, resets = self.by_call, self.read_only, self.resets
        index, end = max(self._reset, position), min(position + window, len(by_call))
        while index < end and ((read_only is not None and read_only(by_call[index])) or (resets is not None and not resets(by_call[index]))):
            index += 1
        self._reset = index
        return index if index < end else None


def _next_observer(reach: Any, after: Any, by_return: list[Op], start: int, invocations: _Invocations,
                   position: int, done: set[int]) -> Op | None:
    """For :func:`_greedy`: the first read-only operation returning after the one returning
    now, not linearized yet, that returns before the next invocation of an operation that
    may reset the state, and cannot reach its observation from ``after`` (model
    ``may_reach``); None if the first such one can, or there is none."""
    read_only, _resets, may_reach = reach
    reset = invocations.next_reset(position, 64)
    reset_horizon = math.inf if reset is None else invocations.by_call[reset].call
    for upcoming in by_return[start:start + 16]:
        if upcoming.ret >= reset_horizon:
            return None
        if upcoming.index in done or not read_only(upcoming):
            continue
        return None if may_reach(after, upcoming) else upcoming
    return None


def _bridge(step: Any, reach: Any, state: Any, op: Op, pending: list[Op], following: Op | None = None) -> list[Op] | None:
    """For :func:`_greedy`: a short sequence of ``pending`` state-changing operations (at
    most _BRIDGE_DEPTH, determinate ones tried first) after which ``op``, illegal in
    ``state``, is legal -- or, with ``following``, after which ``op`` is legal and then
    ``following``'s observation reachable (model ``may_reach``); None when none is found
    within _BRIDGE_NODES model steps. With the model's ``resets`` and ``may_reach``
    (``reach``), a branch is cut when a read-only target can no longer be reached and no
    pending operation may reset the state."""
    target = op if following is None else following
    prune = reach is not None and reach[0](target) and not any(map(reach[1], pending))
    may_reach = reach[2] if prune else None
    budget = [_BRIDGE_NODES]

    def reached(after: Any) -> bool:
        if following is None:
            return step(after, op)[0]
        legal, last = step(after, op)
        return legal and reach[2](last, following)

    def extend(state: Any, chosen: list[Op], depth: int) -> list[Op] | None:
        """A bridge of exactly ``depth`` more operations after ``chosen``."""
        for other in pending:
            if budget[0] <= 0:
                return None
            if any(other is member for member in chosen):
                continue
            budget[0] -= 1
            legal, after = step(state, other)
            if not legal or (may_reach is not None and not may_reach(after, target)):
                continue
            if depth == 1:
                if reached(after):
                    return [*chosen, other]
            else:
                found = extend(after, [*chosen, other], depth - 1)
                if found is not None:
                    return found
        return None

    for depth in range(1, min(_BRIDGE_DEPTH, len(pending)) + 1):  # the shortest bridge first
        found = extend(state, [], depth)
        if found is not None or budget[0] <= 0:
            return found
    return None


def _others_first(step: Any, read_only: Any, reach: Any, state: Any, after: Any, group: list[Op],
                  by_return: list[Op], start: int, invocations: _Invocations, position: int, done: set[int]) -> bool:
    """For :func:`_greedy`: whether the pending determinate state-changing operations
    ``group`` (in order of return) should take effect before the one returning now (whose
    effect takes ``state`` to ``after``) rather than after it: yes when the usual order makes
    one of them illegal and this one does not, or else when the first read-only operation
    that must follow them all and may precede the next determinate state-changing
    invocation is legal after this order and not after the usual one (or, up to the next
    invocation of one that may reset the state, can reach its observation, model
    ``may_reach``, after this order and not the other), or when that next determinate
    state-changing operation (invoked after them all, maybe past an 'info' one) is -- a cas
    that expects one of their values. A heuristic: a wrong guess only makes the greedy pass
    give up."""
    later = after
    for other in group:
        legal, later = step(later, other)
        if not legal:
            later = _ILLEGAL
            break
    earlier = state
    for other in group:
        legal, earlier = step(earlier, other)
        if not legal:
            return False
    legal, earlier = step(earlier, by_return[start - 1])
    if not legal or earlier == later:
        return False
    if later is _ILLEGAL:
        return True
    # The next invocation of a determinate state-changing operation before any that may reset
    # the state (model ``resets``), and of one that may; and that determinate one, even past
    # an 'info' reset.
    change, reset = invocations.next_change(position, 64), invocations.next_reset(position, 64)
    first_change = None if change is None else invocations.by_call[change]
    reset_horizon = math.inf if reset is None else invocations.by_call[reset].call
    horizon = math.inf if first_change is None or (reset is not None and reset < change) else first_change.call
    settled = max(other.ret for other in group)
    for upcoming in by_return[start:start + 64]:
        if upcoming.index in done or upcoming.call <= settled:
            continue
        if read_only is None or not read_only(upcoming):
            if upcoming is first_change:  # it follows them all: legal after one order only?
                legal_earlier = step(earlier, upcoming)[0]
                if legal_earlier != step(later, upcoming)[0]:
                    return legal_earlier
            continue
        if upcoming.call < horizon:  # may come right after them: legal or not
            legal_earlier = step(earlier, upcoming)[0]
            if legal_earlier != step(later, upcoming)[0]:
                return legal_earlier
        elif upcoming.ret < reset_horizon and reach is not None:  # reachable or not
            legal_earlier = reach[2](earlier, upcoming)
            if legal_earlier != reach[2](later, upcoming):
                return legal_earlier
    return False


def _search_steps(ops: Sequence[Op], model: Any, frontier: dict[str, Any] | None = None,
                  greedy: bool = True) -> Generator[None, None, bool]:
    """The search for :func:`_search`, as a generator: yields every _STEPS_PER_SLICE steps,
    returns whether ``ops`` is linearizable. On False, ``frontier["op"]`` is the operation
    the search got stuck at (see :func:`_first_violation`)."""
    if False:  # makes this a generator even when it returns before its first yield
        yield
    if greedy and _GREEDY_FIRST and _greedy(ops, model):
        return True
    determinate = sorted((op for op in ops if op.ret != math.inf), key=_BY_RETURN)
    if not determinate:
        return True  # every 'info' operation may be left out
    read_only = getattr(model, "read_only", None) or (lambda op: False)
    # Indeterminate operations with the same effect (same f, key, argument, output) are
    # interchangeable once invoked, so they are tried in order of invocation only: their bits
    # are contiguous per class, and the linearized ones are always a prefix of their class.
    classes: dict[Any, list[Op]] = {}
    info_read_only = []
    for op in ops:
        if op.ret != math.inf:
            continue
        if read_only(op):
            info_read_only.append(op)
            continue
        try:
            signature: Any = (op.f, op.key, op.value, op.output)
            hash(signature)
        except TypeError:  # an unhashable argument: a class of its own
            signature = op.index
        classes.setdefault(signature, []).append(op)
    order = list(determinate)
    class_first = class_last = 0  # (bits of the 'info' region: bit q is order[det_count + q])
    for members in classes.values():
        members.sort(key=_BY_CALL)
        class_first |= 1 << (len(order) - len(determinate))
        order.extend(members)
        class_last |= 1 << (len(order) - len(determinate) - 1)
    order.extend(info_read_only)
    det_count, count = len(determinate), len(order)
    info_count = count - det_count
    ro_flags = [read_only(op) for op in order]
    # A configuration is (base, d, i, state): every determinate operation before ``base`` is
    # linearized and ``base`` itself is not (it is the earliest-returning pending one); bit k
    # of ``d`` is determinate operation base + k; bit q of ``i`` is 'info' operation
    # det_count + q. So no set of operations is as long as the history: the determinate
    # part covers the operations between the earliest pending one and the latest invoked
    # by its return (a window a few concurrent clients wide), and the search's time and
    # memory grow with the history's length, not with its square.
    info_ro = _bits(ro_flags[det_count:])
    info_rw = ((1 << info_count) - 1) ^ info_ro
    not_last = info_rw & ~class_last
    calls = [op.call for op in order]
    by_call = sorted(range(count), key=calls.__getitem__)  # stable: ties in bit order
    # Pruning by reachability (models with ``resets`` and ``may_reach``): the earliest-
    # returning pending determinate read-only operation must take effect before it
    # returns, after the operations invoked by then only; if none of those may reset the
    # state, its observation must be reachable from the current state without a reset.
    resets = getattr(model, "resets", None)
    may_reach = getattr(model, "may_reach", None)
    prune = resets is not None and may_reach is not None
    reset_flags = [bool(resets(op)) for op in order] if prune else [False] * count
    reset_info = _bits(reset_flags[det_count:])
    # Blind indeterminate operations (models with ``needs_observer`` and ``observes``): an
    # 'info' write is only worth linearizing right before an operation that observes the
    # state (a read it makes legal, a cas it makes swap); any linearization can be
    # normalized so (an overwritten or last blind write may be left out, as 'info' allows).
    # After one that made no read legal, only observing operations are tried next.
    needs_observer = getattr(model, "needs_observer", None)
    observes = getattr(model, "observes", None)
    observer_flags = [False] * count
    blind_info = observer_info = 0
    if needs_observer is not None and observes is not None:
        for bit, op in enumerate(order):
            if ro_flags[bit]:
                continue
            if bit >= det_count and needs_observer(op):
                blind_info |= 1 << (bit - det_count)
            if observes(op):
                observer_flags[bit] = True
                if bit >= det_count:
                    observer_info |= 1 << (bit - det_count)
    # The candidates while determinate operation b is the earliest-returning pending one:
    # every operation invoked no later than it returns. Determinate ones relative to b
    # (state-changing, those of them that observe, read-only, resets), 'info' ones as bits
    # of the info region; built in one walk of the operations by invocation (each b's sets
    # from the last by a shift and the newly invoked).
    det_rw_at: list[int] = []
    det_observer_at: list[int] = []
    det_ro_at: list[int] = []
    det_reset_at: list[int] = []
    info_at: list[int] = []  # an int object shared while no 'info' operation is invoked
    rel_rw = rel_observer = rel_ro = rel_reset = info = 0
    window = position = 0
    for b, op in enumerate(determinate):
        if b:
            rel_rw >>= 1
            rel_observer >>= 1
            rel_ro >>= 1
            rel_reset >>= 1
        ret = op.ret
        while position < count and calls[by_call[position]] <= ret:
            j = by_call[position]
            position += 1
            if j < det_count:
                flag = 1 << (j - b)  # j >= b: an earlier-returning one was invoked by then
                if ro_flags[j]:
                    rel_ro |= flag
                else:
                    rel_rw |= flag
                    if observer_flags[j]:
                        rel_observer |= flag
                if reset_flags[j]:
                    rel_reset |= flag
            else:
                info |= 1 << (j - det_count)
        det_rw_at.append(rel_rw)
        det_observer_at.append(rel_observer)
        det_ro_at.append(rel_ro)
        det_reset_at.append(rel_reset)
        info_at.append(info)
        window = max(window, (rel_rw | rel_ro).bit_length())
    next_ro = [det_count] * (det_count + 1)  # the first determinate read-only operation from b on
    for b in range(det_count - 1, -1, -1):
        next_ro[b] = b if ro_flags[b] else next_ro[b + 1]
    resets_before = [0] * (det_count + 1)  # determinate resets before b
    for b in range(det_count):
        resets_before[b + 1] = resets_before[b] + reset_flags[b]
    reach_cache: list[dict[Any, bool]] = [{} for _ in range(det_count)] if prune else []
    transitions: list[dict[Any, Any]] = [{} for _ in order]
    step = model.step
    # A configuration in the memo keeps a key and the 'info' sets it was reached with.
    configurations_max = _SEARCH_BYTES_MAX // (3 * (info_count + window) // 8 + 400)

    def transition(bit: int, state: Any) -> Any:
        legal, new = step(state, order[bit])
        result = new if legal else _ILLEGAL
        if legal and ro_flags[bit]:
            assert new == state, f"read-only {order[bit]} changed the state"
        transitions[bit][state] = result
        return result

    def reachable(b: int, d: int, i: int, state: Any) -> bool:
        """False when the configuration is dead by the reachability rule above."""
        span = d.bit_length()
        r = next_ro[b]
        while r < det_count and r - b < span and (d >> (r - b)) & 1:
            r = next_ro[r + 1]
        if r >= det_count:
            return True  # no determinate read-only operation pending
        # A pending reset among r's candidates: a determinate one before r (all invoked),
        # one from r on invoked by r's return, or an 'info' one.
        pending = ~d & ((1 << min(span, r - b)) - 1)
        while pending:
            low = pending & -pending
            pending ^= low
            if reset_flags[b + low.bit_length() - 1]:
                return True
        if r - b > span and resets_before[r] > resets_before[b + span]:
            return True
        if det_reset_at[r] & ~(d >> (r - b)) or info_at[r] & reset_info & ~i:
            return True
        cache = reach_cache[r]
        answer = cache.get(state)
        if answer is None:
            answer = cache[state] = bool(may_reach(state, order[r]))
        return answer

    def legal_among(pending: int, offset: int, state: Any) -> int:
        """The bits of ``pending`` (read-only operations ``offset + k``) legal in ``state``."""
        legal = 0
        while pending:
            low = pending & -pending
            pending ^= low
            bit = offset + low.bit_length() - 1
            new = transitions[bit].get(state, _MISSING)
            if new is _MISSING:
                new = transition(bit, state)
            if new is not _ILLEGAL:
                legal |= low
        return legal

    def absorb(b: int, d: int, i: int, state: Any) -> tuple[int, int, int]:
        """Linearize every legal read-only candidate; return the configuration's sets."""
        while True:
            d |= legal_among(det_ro_at[b] & ~d, b, state)
            i |= legal_among(info_at[b] & info_ro & ~i, det_count, state)
            if not d & 1:
                return b, d, i
            b, d = _moved_on(b, d)
            if b >= det_count:
                return b, d, i

    state = model.init()
    b, d, i = absorb(0, 0, 0, state)
    if b >= det_count:
        return True
    deepest = b  # the earliest pending determinate operation, at its latest
    seen = {(b, d, i & info_ro, state): [i & info_rw]}
    stack_b, stack_d, stack_i, stack_state = [b], [d], [i], [state]
    leaders = ((i & not_last) << 1 | class_first) & ~i
    stack_det, stack_info = [det_rw_at[b] & ~d], [info_at[b] & info_rw & leaders]  # branches left
    steps = stored = 0  # stored: configurations added to the memo (an upper bound on its size)
    while stack_det:
        branches = stack_det[-1]
        if branches:
            low = branches & -branches
            stack_det[-1] = branches ^ low
            determinate_branch = True
        else:
            branches = stack_info[-1]
            if not branches:
                stack_det.pop()
                stack_info.pop()
                stack_b.pop()
                stack_d.pop()
                stack_i.pop()
                stack_state.pop()
                continue
            low = branches & -branches
            stack_info[-1] = branches ^ low
            determinate_branch = False
        steps += 1
        if steps % _STEPS_PER_SLICE == 0:
            if len(stack_det) + stored > configurations_max:
                raise _OutOfMemory
            yield
        b, d, i, state = stack_b[-1], stack_d[-1], stack_i[-1], stack_state[-1]
        bit = (b if determinate_branch else det_count) + low.bit_length() - 1
        new = transitions[bit].get(state, _MISSING)
        if new is _MISSING:
            new = transition(bit, state)
        if new is _ILLEGAL or (not determinate_branch and new == state):
            continue
        if determinate_branch:
            d |= low
            if d & 1:
                b, d = _moved_on(b, d)
                if b >= det_count:
                    return True
            restricted = False
        else:
            i |= low
            restricted = bool(low & blind_info)
        if det_ro_at[b] & ~d or info_at[b] & info_ro & ~i:  # (the common case without is inlined)
            before = (b, d, i)
            b, d, i = absorb(b, d, i, new)
            if b >= det_count:
                return True
            restricted = restricted and (b, d, i) == before
        if prune and not reachable(b, d, i, new):
            continue
        # Dominance: the same determinate progress and state, reached before with a subset of
        # these indeterminate operations linearized, had every option this one has.
        key = (b, d, i & info_ro, new, True) if restricted else (b, d, i & info_ro, new)
        used = i & info_rw
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = [used]
        else:
            dominated = False
            for other in earlier:
                if other | used == used:
                    dominated = True
                    break
            if dominated:
                continue
            # Keep an antichain: what the new entry dominates can prune nothing it cannot.
            earlier[:] = [other for other in earlier if other | used != other]
            earlier.append(used)
        stored += 1
        if b > deepest:
            deepest = b
        stack_b.append(b)
        stack_d.append(d)
        stack_i.append(i)
        stack_state.append(new)
        leaders = ((i & not_last) << 1 | class_first) & ~i
        branches = det_rw_at[b] & ~d
        info_branches = info_at[b] & info_rw & leaders
        if restricted:
            branches &= det_observer_at[b]
            info_branches &= observer_info
        stack_det.append(branches)
        stack_info.append(info_branches)
    if frontier is not None:
        frontier["op"] = order[deepest]
    return False


def _bits(flags: Sequence[bool]) -> int:
    """The bitset of the positions of ``flags`` that are true."""
    bits = 0
    for position, flag in enumerate(flags):
        if flag:
            bits |= 1 << position
    return bits


def _moved_on(b: int, d: int) -> tuple[int, int]:
    """For :func:`_search_steps`: ``(b, d)`` once determinate operation ``b`` (bit 0 of
    ``d``) is linearized: the earliest pending one is past the run of linearized ones, and
    ``d`` relative to it."""
    shift = (~d & (d + 1)).bit_length() - 1
    return b + shift, d >> shift


def _truncated(ops: Sequence[Op], count: int) -> list[Op]:
    """The history as it stood just before the (count+1)-th invocation: the first ``count``
    operations, those still running then made open ('info'). Linearizability is prefix-closed,
    so if this is not linearizable, neither is any longer prefix nor the whole."""
    if count >= len(ops):
        return list(ops)
    cut = ops[count].call
    return [op if op.ret < cut else replace(op, status="info", output=UNKNOWN, ret=math.inf)
            for op in ops[:count]]


def _weakened(op: Op) -> Op:
    """``op`` made indeterminate: it may take effect at any time after its invocation, or not
    at all. Any linearization of a history stays one after weakening an operation in it."""
    return replace(op, status="info", output=UNKNOWN, ret=math.inf)


class _Budget:
    """The evidence search's bounds: a deadline (its own time limit, within the check's) and
    a cap on searches that exhaust their step budget (each costs _EVIDENCE_SLICES slices
    and proves nothing). ``search`` raises _OutOfTime past either."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.exhausted = 0
        self.searches = 0
        self.why = ""  # why the evidence is best-so-far: "time limit", "searches capped", "step budget"
        self.slices_left = _EVIDENCE_TOTAL_SLICES

    def search(self, ops: Sequence[Op], model: Any, slices: int = _EVIDENCE_SLICES) -> bool | None:
        """A bounded search; a short one (``slices`` below the default) that exhausts its
        bound does not count against the cap."""
        if self.exhausted >= _EVIDENCE_EXHAUSTED_MAX:
            self.why = "searches capped"
            raise _OutOfTime
        if self.slices_left <= 0:
            self.why = "step budget"
            raise _OutOfTime
        self.searches += 1
        used: dict[str, Any] = {}
        try:
            answer = _search(ops, model, self.deadline, min(slices, self.slices_left), used)
        except _OutOfTime:
            self.why = "time limit"
            raise
        finally:
            self.slices_left -= max(1, used.get("turns", 0))
        if answer is None and slices >= _EVIDENCE_SLICES:
            self.exhausted += 1
        return answer


def _minimal_evidence(ops: Sequence[Op], model: Any, deadline: float | None, budget: _Budget | None = None,
                      stuck_op: Op | None = None, refutation: tuple[str, Any] | None = None) -> tuple[list[Op], list[Op], bool]:
    """Explain why ``ops`` (one non-linearizable partition) is not linearizable.

    Returns ``(evidence, context, minimal)``: ``evidence`` is a set of determinate operations
    of ``ops`` such that ``evidence + context`` is not linearizable, where ``context`` holds
    other state-changing operations of a prefix of the history, weakened to "may have taken
    effect at any time after its invocation, or not at all". Since weakening, dropping
    read-only operations and dropping operations nothing can observe
    (``model.drop_unobserved``) only add linearizations, this proves that ``ops`` is not
    linearizable; and since context operations may be left out, ``evidence`` on its own is
    not linearizable either. ``minimal`` says whether ``evidence`` is known 1-minimal:
    moving any one of its operations to the context (or dropping it, if read-only) makes the
    rest linearizable.

    Why a context rather than plain removal: dropping a write can *create* a violation (a read
    of a value nobody wrote any more), so "remove operations while it stays non-linearizable"
    ends at a lone read that proves nothing about the history.

    Steps, cheapest first:

    1. A refutation (:func:`_refuted`: a read of a value never written, or written only
       later): that read alone, with the writes invoked before it returned as context.
    2. Where the search got stuck (``stuck``, :func:`_first_violation`): the history up to
       that operation's return is usually already non-linearizable (else the shortest such
       prefix, by binary search); evidence is grown from the stuck operation outwards (1,
       2, 4, ... determinate operations nearest to it in return order, the rest of the
       prefix as context) until it is non-linearizable.
    3. Greedy removal from that evidence -- halves, quarters, ... single operations --
       repeated until no single operation can go.

    Every search is bounded (_EVIDENCE_SLICES); the evidence stays sound whatever the
    bounds cut. ``budget`` (default: ``deadline`` and _EVIDENCE_EXHAUSTED_MAX) stops the
    work early with the best evidence so far (``minimal`` False, ``budget.why`` says why).
    ``stuck_op``: where the verdict's search got stuck (found again when not given: the
    same operation, since each partition's search is independent of the others).
    ``refutation``: the cheap refutation :func:`_first_violation` found, when it found one
    (``stuck["refutation"]``), so that it is not looked for again.
    """
    budget = budget or _Budget(deadline)
    read_only = getattr(model, "read_only", None) or (lambda op: False)
    drop = getattr(model, "drop_unobserved", None) or (lambda evidence, context: list(context))

    def context_of(prefix: Sequence[Op], evidence: Sequence[Op]) -> list[Op]:
        chosen = {id(op) for op in evidence}
        weakened = [op if op.ret == math.inf else _weakened(op) for op in prefix if id(op) not in chosen and not read_only(op)]
        return drop(evidence, weakened)

    kind, found = refutation or _refutation(ops, model) or (None, None)
    if kind == "refuted":
        before = [op for op in ops if op.call <= found.ret]
        return [found], context_of(before, [found]), True
    stuck: dict[str, Any] = {"op": stuck_op}
    evidence = [op for op in ops if op.ret != math.inf]
    context = context_of(ops, evidence)
    pair = found if kind == "stale" else None
    try:
        if pair is not None:  # 1b. a read of the past: its proof, then greedy removal
            evidence = _stale_evidence(ops, model, *pair)
            context = context_of([op for op in ops if op.call <= pair[1].ret], evidence)
            return _removed(evidence, context, model, budget, read_only, drop)
        if stuck_op is None and _search(ops, model, budget.deadline, None, stuck) is not False:
            return evidence, context, False  # (not expected: the caller saw it fail)
        anchor: Op = stuck["op"]
        # 2. the prefix
        high = sum(1 for op in ops if op.call <= anchor.ret)
        if budget.search(_truncated(ops, high), model) is not False:
            low, high = 1, len(ops)  # the prefix of length `high` is known non-linearizable
            while low < high:
                middle = (low + high) // 2
                if budget.search(_truncated(ops, middle), model) is False:
                    high = middle
                else:  # linearizable, or not settled within the budget: keep the longer prefix
                    low = middle + 1
        prefix = _truncated(ops, high)
        determinate = sorted((op for op in prefix if op.ret != math.inf), key=lambda op: (op.ret, op.call, op.index))
        evidence, context = determinate, context_of(prefix, determinate)
        # ... grown from the stuck operation outwards
        if anchor in determinate:
            centre = determinate.index(anchor)
            nearest = sorted(range(len(determinate)), key=lambda position: (abs(position - centre), position))
            size = 1
            while size < len(determinate):
                window = sorted((determinate[position] for position in nearest[:size]), key=lambda op: op.index)
                around = context_of(prefix, window)
                if budget.search(window + around, model) is False:
                    evidence, context = window, around
                    break
                size *= 2
        evidence.sort(key=lambda op: op.index)
        return _removed(evidence, context, model, budget, read_only, drop)
    except _OutOfTime:
        return evidence, context, False


def _removed(evidence: list[Op], context: list[Op], model: Any, budget: _Budget, read_only: Any, drop: Any) -> tuple[list[Op], list[Op], bool]:
    """Step 3 of :func:`_minimal_evidence`: greedy removal from non-linearizable ``evidence``
    (with ``context``) -- halves, quarters, ... single operations -- repeated until no single
    operation can go; ``(evidence, context, 1-minimal)``, the best so far when ``budget``
    runs out."""
    chunk = max(1, len(evidence) // 2)
    try:
        while True:
            changed, settled = False, True
            start = 0
            while start < len(evidence):
                removed = evidence[start:start + chunk]
                attempt = evidence[:start] + evidence[start + chunk:]
                weakened = drop(attempt, context + [_weakened(op) for op in removed if not read_only(op)])
                answer = budget.search(attempt + weakened, model) if attempt else True
                if answer is False:
                    evidence, context, changed = attempt, weakened, True
                else:
                    settled = settled and answer is True
                    start += chunk
            if chunk > 1:
                chunk //= 2
            elif not changed:
                return evidence, context, settled
    except _OutOfTime:
        return evidence, context, False


def _same_operations(first: Sequence[Op], second: Sequence[Op]) -> bool:
    """Whether two partitions hold the same operations in the same order."""
    return len(first) == len(second) and all(map(operator.is_, first, second))


def _describe_key(key: Any) -> str:
    return "the register" if key is None else f"key {key!r}"


def check_linearizability(ops: Sequence[Op], model: Any, *,
                          time_limit_s: float | None = 10.0,
                          evidence_time_limit_s: float | None = EVIDENCE_TIME_LIMIT_S) -> Verdict:
    """Whether ``ops`` is linearizable under ``model``: True, False, or None (time limit hit).

    'fail' operations are dropped (they did not happen); 'info' operations (``ret`` infinite)
    may take effect anywhere after their invocation, or never. On False, ``evidence`` is a
    set of determinate operations of one partition that cannot be linearized even if every
    other operation took effect at any time after its invocation or never, 1-minimal if
    ``details['evidence_minimal']``. The evidence is searched once the verdict is known,
    within ``evidence_time_limit_s`` (and what is left of ``time_limit_s``); when a bound
    stops it, it is the best found so far (sound, maybe not 1-minimal).
    ``details``: ``ops`` (operations checked), ``partitions``, ``check_seconds``; on False also
    ``verdict_seconds``, ``evidence_seconds``, ``evidence_minimal``, ``evidence_status``
    ("1-minimal", or "best so far" with why: "time limit", "searches capped", "step budget") and
    ``evidence_context_ops`` (the other operations weakened so).
    """
    started = perf_counter()
    deadline = None if time_limit_s is None else started + time_limit_s
    statuses = set(map(_STATUS, ops))
    assert statuses <= {"ok", "info", "fail"}, f"statuses must be ok, info or fail: {statuses}"
    kept = [op for op in ops if op.status != "fail"] if "fail" in statuses else list(ops)
    if "info" in statuses:
        assert all(op.ret == math.inf for op in kept if op.status == "info"), \
            f"info operation must be open: {min((op for op in kept if op.status == 'info' and op.ret != math.inf), key=_BY_INDEX)}"
    # The common case first: the greedy pass proves every partition, in whatever order the
    # operations come (its linearization is a proof whatever the order of ties).
    partitions = model.partition(kept)
    details: dict[str, Any] = {"ops": len(kept), "partitions": len(partitions)}
    linearizable = (f"linearizable: {len(kept)} operations in {len(partitions)} "
                    f"partition{'s' if len(partitions) != 1 else ''}")
    out_of_time = f"time limit of {time_limit_s} s hit before every partition was checked"
    proved: list[bool] = []  # the greedy pass's answers, up to its first failure
    if _GREEDY_FIRST:
        for part in partitions:
            proved.append(_greedy(part, model))
            if not proved[-1]:
                break
        else:
            now = perf_counter()
            details["check_seconds"] = round(now - started, 6)
            if deadline is not None and now > deadline:  # as the search answers past it
                return Verdict(None, out_of_time, (), details)
            return Verdict(True, linearizable, (), details)

    def finish(valid: bool | None, reason: str, evidence: tuple[Op, ...] = ()) -> Verdict:
        details["check_seconds"] = round(perf_counter() - started, 6)
        return Verdict(valid, reason, evidence, details)

    # Otherwise in the order of the history (the searches, the evidence and which violation
    # is reported first do not depend on the order the operations were given in).
    given = partitions
    early = next((op for op in kept if op.ret < op.call), None)
    if early is not None:
        raise ValueError(f"operation {early.index} returns before it is invoked: {early}")
    kept.sort(key=_BY_INDEX)
    partitions = [sorted(part, key=_BY_INDEX) for part in model.partition(kept)]
    if len(given) != len(partitions) or not all(map(_same_operations, given[:len(proved)], partitions)):
        proved = []  # in another order: the greedy pass goes again
    stuck: dict[str, Any] = {}
    try:
        failing = _first_violation(partitions, model, deadline, None, stuck, proved)
    except _OutOfTime:
        return finish(None, out_of_time)
    except _OutOfMemory:
        longest = max(len(part) for part in partitions)
        return finish(None, f"memory bound of {_SEARCH_BYTES_MAX // 2**20} MiB hit before "
                      f"every partition was checked (longest: {longest} operations)")
    if failing is None:
        return finish(True, linearizable)
    part = partitions[failing]
    verdict_at = perf_counter()
    details["verdict_seconds"] = round(verdict_at - started, 6)
    evidence_deadline = deadline
    if evidence_time_limit_s is not None:
        evidence_deadline = min(deadline if deadline is not None else math.inf, verdict_at + evidence_time_limit_s)
    budget = _Budget(evidence_deadline)
    evidence, context, minimal = _minimal_evidence(part, model, evidence_deadline, budget, stuck.get("op"), stuck.get("refutation"))
    details["evidence_seconds"] = round(perf_counter() - verdict_at, 6)
    details["evidence_minimal"] = minimal
    details["evidence_status"] = "1-minimal" if minimal else f"best so far ({budget.why})" if budget.why else "best so far"
    details["evidence_context_ops"] = len(context)
    return finish(False, f"{_describe_key(part[0].key)}: {len(evidence)} operations cannot be "
                  "linearized", tuple(evidence))

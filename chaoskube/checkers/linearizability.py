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

Operation sets are bitsets (Python ints): determinate operations get the low bits in order of
completion, so the earliest-completing pending one is the lowest clear bit, and the candidates
for the next linearization point are a precomputed mask for that bit.

Models are small classes: ``init()``, ``step(state, op) -> (legal, new_state)``, ``partition
(ops) -> list[list[Op]]``, and optionally ``read_only(op) -> bool`` (true only if ``step``
never changes the state for this operation). States must be hashable.

Evidence of a violation: a few determinate operations of one partition that cannot be
linearized even if every other operation took effect at any time after its invocation, or
never (see :func:`_minimal_evidence` for why not simply "a subset that is not linearizable").

Non-guarantees: the answer is None (unknown) when the time limit is hit. The evidence is *a*
1-minimal explanation, not the smallest one; its search shares the time limit and bounds each
of its searches, and ``details['evidence_minimal']`` says whether it is known 1-minimal.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import replace
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
# Bound on the memory of one partition's search: each explored configuration keeps about three
# bitsets as long as the partition, so memory grows with the square of its length (as in
# porcupine). At the bound the answer is unknown rather than the machine running out.
_SEARCH_BYTES_MAX = 512 * 2**20
# Partitions up to this length get every candidate mask computed up front (at most 8 MiB).
_PRECOMPUTED_MASKS_MAX = 4096


class Model(Protocol):
    def init(self) -> Any: ...

    def step(self, state: Any, op: Op) -> tuple[bool, Any]: ...

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]: ...


def _partition_by_key(ops: Sequence[Op]) -> list[list[Op]]:
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

    def resets(self, op: Op) -> bool:
        """Whether ``op`` may change the state (a write; a cas that may swap)."""
        return op.f == "write" or (op.f == "cas" and op.output is not False)

    def may_reach(self, state: Any, op: Op) -> bool:
        """Whether read-only ``op`` can be legal after ``state`` and only operations that
        do not reset it (for a register: none change it)."""
        return self.step(state, op)[0]

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

    def resets(self, op: Op) -> bool:
        """Whether ``op`` may set the state to something that does not extend it (a put)."""
        return op.f == "put"

    def may_reach(self, state: Any, op: Op) -> bool:
        """Whether get ``op`` can be legal after ``state`` and appends only: its output
        extends the state."""
        return op.output is UNKNOWN or op.output.startswith(state)

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return _partition_by_key(ops)


class _OutOfTime(Exception):
    pass


class _OutOfSteps(Exception):
    pass


class _OutOfMemory(Exception):
    pass


_MISSING = object()
_ILLEGAL = object()


def _search(ops: Sequence[Op], model: Any, deadline: float | None,
            max_slices: int | None = None) -> bool | None:
    """Whether ``ops`` (one partition, no 'fail' operations) is linearizable; None when
    ``max_slices`` slices of _STEPS_PER_SLICE steps did not settle it.

    Raises _OutOfTime past ``deadline`` (a perf_counter() value, or None for no limit).
    """
    try:
        return _first_violation([ops], model, deadline, max_slices) is None
    except (_OutOfSteps, _OutOfMemory):
        return None


def _first_violation(partitions: Sequence[Sequence[Op]], model: Any, deadline: float | None,
                     max_slices: int | None = None) -> int | None:
    """The position of a non-linearizable partition, or None if all are linearizable.

    The searches run round-robin, a slice of steps each in turn, and the first to answer False
    ends the check -- as porcupine runs partitions in parallel and stops at the first
    violation -- so one hard partition cannot hide an easy violation in another.
    Raises _OutOfTime past ``deadline``, _OutOfSteps after ``max_slices`` turns, and
    _OutOfMemory when a search would pass _SEARCH_BYTES_MAX.
    """
    active = [(position, _search_steps(part, model)) for position, part in enumerate(partitions)]
    turns = 0
    while active:
        turns += 1
        if max_slices is not None and turns > max_slices:
            raise _OutOfSteps
        still = []
        for position, search in active:
            try:
                next(search)
            except StopIteration as stop:
                if not stop.value:
                    return position
                continue
            still.append((position, search))
        active = still
        if deadline is not None and perf_counter() > deadline:
            raise _OutOfTime
    return None


def _search_steps(ops: Sequence[Op], model: Any) -> Generator[None, None, bool]:
    """The search for :func:`_search`, as a generator: yields every _STEPS_PER_SLICE steps,
    returns whether ``ops`` is linearizable."""
    if False:  # makes this a generator even when it returns before its first yield
        yield
    determinate = sorted((op for op in ops if op.ret != math.inf),
                         key=lambda op: (op.ret, op.call, op.index))
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
    class_first = class_last = 0
    for members in classes.values():
        members.sort(key=lambda op: (op.call, op.index))
        class_first |= 1 << len(order)
        order.extend(members)
        class_last |= 1 << (len(order) - 1)
    order.extend(info_read_only)
    det_count, count = len(determinate), len(order)
    det_mask = (1 << det_count) - 1
    info_mask = ((1 << count) - 1) ^ det_mask
    ro_mask = 0
    for bit, op in enumerate(order):
        if read_only(op):
            ro_mask |= 1 << bit
    info_rw_mask = info_mask & ~ro_mask
    not_last = info_rw_mask & ~class_last
    # Candidates while determinate operation j is the earliest-returning pending one: every
    # operation invoked no later than it returns, i.e. the first invoked[j] of by_call.
    by_call = sorted(range(count), key=lambda bit: (order[bit].call, bit))
    invoked: list[int] = []
    position = 0
    for op in determinate:
        while position < count and order[by_call[position]].call <= op.ret:
            position += 1
        invoked.append(position)
    # Pruning by reachability (models with ``resets`` and ``may_reach``): the earliest-
    # returning pending determinate read-only operation must take effect before it
    # returns, after the operations invoked by then only; if none of those may reset the
    # state, its observation must be reachable from the current state without a reset.
    resets = getattr(model, "resets", None)
    may_reach = getattr(model, "may_reach", None)
    prune = resets is not None and may_reach is not None
    reset_mask = 0
    if prune:
        for bit, op in enumerate(order):
            if resets(op):
                reset_mask |= 1 << bit
    ro_det_mask = ro_mask & det_mask
    reach_cache: list[dict[Any, bool]] = [{} for _ in range(det_count)] if prune else []
    ro_candidates: Sequence[int]
    det_rw_candidates: Sequence[int]
    info_candidates: Sequence[int]
    reset_candidates: Sequence[int]
    if count <= _PRECOMPUTED_MASKS_MAX:
        candidates = []
        mask = position = 0
        for target in invoked:
            while position < target:
                mask |= 1 << by_call[position]
                position += 1
            candidates.append(mask)
        ro_candidates = [mask & ro_mask for mask in candidates]
        det_rw_candidates = [mask & det_mask & ~ro_mask for mask in candidates]
        info_candidates = [mask & info_rw_mask for mask in candidates]
        reset_candidates = [mask & reset_mask for mask in candidates]
    else:  # a mask per operation would take memory in the square of the partition's length
        walker = _CandidateWalker(by_call, invoked)
        ro_candidates = _CandidateMasks(walker, ro_mask)
        det_rw_candidates = _CandidateMasks(walker, det_mask & ~ro_mask)
        info_candidates = _CandidateMasks(walker, info_rw_mask)
        reset_candidates = _CandidateMasks(walker, reset_mask)
    transitions: list[dict[Any, Any]] = [{} for _ in order]
    step = model.step
    configurations_max = _SEARCH_BYTES_MAX // (3 * count // 8 + 150)

    def transition(bit: int, state: Any) -> Any:
        legal, new = step(state, order[bit])
        result = new if legal else _ILLEGAL
        if legal and (ro_mask >> bit) & 1:
            assert new == state, f"read-only {order[bit]} changed the state"
        transitions[bit][state] = result
        return result

    def reachable(linearized: int, state: Any) -> bool:
        """False when the configuration is dead by the reachability rule above."""
        pending = ro_det_mask & ~linearized
        if not pending:
            return True
        bit = (pending & -pending).bit_length() - 1
        if reset_candidates[bit] & ~linearized:
            return True
        cache = reach_cache[bit]
        answer = cache.get(state)
        if answer is None:
            answer = cache[state] = bool(may_reach(state, order[bit]))
        return answer

    def absorb(linearized: int, state: Any) -> tuple[int, int]:
        """Linearize every legal read-only candidate; return (linearized, lowest pending bit)."""
        lowest = ~linearized & (linearized + 1)
        while lowest & det_mask:
            pending = ro_candidates[lowest.bit_length() - 1] & ~linearized
            while pending:
                low = pending & -pending
                pending ^= low
                bit = low.bit_length() - 1
                new = transitions[bit].get(state, _MISSING)
                if new is _MISSING:
                    new = transition(bit, state)
                if new is not _ILLEGAL:
                    linearized |= low
            after = ~linearized & (linearized + 1)
            if after == lowest:
                break
            lowest = after
        return linearized, lowest

    state = model.init()
    linearized, lowest = absorb(0, state)
    if not lowest & det_mask:
        return True
    main_mask = ~info_rw_mask
    seen = {(linearized & main_mask, state): [linearized & info_rw_mask]}
    stack_linearized = [linearized]
    stack_state = [state]
    bit = lowest.bit_length() - 1
    leaders = ((linearized & not_last) << 1 | class_first) & ~linearized
    stack_branches = [(det_rw_candidates[bit] & ~linearized) | (info_candidates[bit] & leaders)]
    steps = stored = 0  # stored: configurations added to the memo (an upper bound on its size)
    while stack_branches:
        branches = stack_branches[-1]
        if not branches:
            stack_branches.pop()
            stack_state.pop()
            stack_linearized.pop()
            continue
        low = branches & -branches
        stack_branches[-1] = branches ^ low
        steps += 1
        if steps % _STEPS_PER_SLICE == 0:
            if len(stack_branches) + stored > configurations_max:
                raise _OutOfMemory
            yield
        bit = low.bit_length() - 1
        state = stack_state[-1]
        new = transitions[bit].get(state, _MISSING)
        if new is _MISSING:
            new = transition(bit, state)
        if new is _ILLEGAL or (low & info_mask and new == state):
            continue
        linearized = stack_linearized[-1] | low
        lowest = ~linearized & (linearized + 1)
        if not lowest & det_mask:
            return True
        bit = lowest.bit_length() - 1
        if ro_candidates[bit] & ~linearized:  # (the common case without is inlined)
            linearized, lowest = absorb(linearized, new)
            if not lowest & det_mask:
                return True
            bit = lowest.bit_length() - 1
        if prune and not reachable(linearized, new):
            continue
        # Dominance: the same determinate progress and state, reached before with a subset of
        # these indeterminate operations linearized, had every option this one has.
        key = (linearized & main_mask, new)
        used = linearized & info_rw_mask
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
        stack_linearized.append(linearized)
        stack_state.append(new)
        leaders = ((linearized & not_last) << 1 | class_first) & ~linearized
        stack_branches.append((det_rw_candidates[bit] & ~linearized)
                              | (info_candidates[bit] & leaders))
    return False


class _CandidateWalker:
    """The candidate mask for determinate operation j, built by moving from the last j asked
    (the search's frontier moves little between steps) instead of kept for every j."""

    def __init__(self, by_call: list[int], invoked: list[int]) -> None:
        self.by_call, self.invoked = by_call, invoked
        self.position = self.mask = 0

    def mask_for(self, j: int) -> int:
        target, position, mask, by_call = self.invoked[j], self.position, self.mask, self.by_call
        while position < target:
            mask |= 1 << by_call[position]
            position += 1
        while position > target:
            position -= 1
            mask ^= 1 << by_call[position]
        self.position, self.mask = position, mask
        return mask


class _CandidateMasks:
    """``walker.mask_for(j) & select``, indexable like the precomputed lists."""

    def __init__(self, walker: _CandidateWalker, select: int) -> None:
        self.walker, self.select = walker, select

    def __getitem__(self, j: int) -> int:
        return self.walker.mask_for(j) & self.select


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


def _minimal_evidence(ops: Sequence[Op], model: Any, deadline: float | None
                      ) -> tuple[list[Op], list[Op], bool]:
    """Explain why ``ops`` (one non-linearizable partition) is not linearizable.

    Returns ``(evidence, context, minimal)``: ``evidence`` is a set of determinate operations
    of ``ops`` such that ``evidence + context`` is not linearizable, where ``context`` holds the
    other state-changing operations of a prefix of the history, weakened to "may have taken
    effect at any time after its invocation, or not at all". Since weakening and dropping
    read-only operations only add linearizations, this proves that ``ops`` is not linearizable;
    and since context operations may be left out, ``evidence`` on its own is not linearizable
    either. ``minimal`` says whether ``evidence`` is known 1-minimal: moving any one of its
    operations to the context (or dropping it, if read-only) makes the rest linearizable.

    Why a context rather than plain removal: dropping a write can *create* a violation (a read
    of a value nobody wrote any more), so "remove operations while it stays non-linearizable"
    ends at a lone read that proves nothing about the history.

    Steps: the shortest prefix by invocation that is already non-linearizable (binary search;
    sound and monotone because linearizability is prefix-closed, with the operations running at
    the cut weakened), then greedy removal from the evidence -- halves, quarters, ... single
    operations -- repeated until no single operation can go. Stops with what it has at the
    deadline (``minimal`` False).
    """
    read_only = getattr(model, "read_only", None) or (lambda op: False)
    evidence = [op for op in ops if op.ret != math.inf]
    context = [op for op in ops if op.ret == math.inf and not read_only(op)]
    try:
        low, high = 1, len(ops)  # the prefix of length `high` is known non-linearizable
        while low < high:
            middle = (low + high) // 2
            if _search(_truncated(ops, middle), model, deadline, _EVIDENCE_SLICES) is False:
                high = middle
            else:  # linearizable, or not settled within the budget: keep the longer prefix
                low = middle + 1
        prefix = _truncated(ops, high)
        evidence = [op for op in prefix if op.ret != math.inf]
        context = [op for op in prefix if op.ret == math.inf and not read_only(op)]
        chunk = max(1, len(evidence) // 2)
        while True:
            changed, settled = False, True
            start = 0
            while start < len(evidence):
                removed = evidence[start:start + chunk]
                attempt = evidence[:start] + evidence[start + chunk:]
                weakened = context + [_weakened(op) for op in removed if not read_only(op)]
                answer = (_search(attempt + weakened, model, deadline, _EVIDENCE_SLICES)
                          if attempt else True)
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


def _describe_key(key: Any) -> str:
    return "the register" if key is None else f"key {key!r}"


def check_linearizability(ops: Sequence[Op], model: Any, *,
                          time_limit_s: float | None = 10.0) -> Verdict:
    """Whether ``ops`` is linearizable under ``model``: True, False, or None (time limit hit).

    'fail' operations are dropped (they did not happen); 'info' operations (``ret`` infinite)
    may take effect anywhere after their invocation, or never. On False, ``evidence`` is a
    set of determinate operations of one partition that cannot be linearized even if every
    other operation took effect at any time after its invocation or never, 1-minimal if
    ``details['evidence_minimal']``; it is searched within the same time limit.
    ``details``: ``ops`` (operations checked), ``partitions``, ``check_seconds``; on False also
    ``evidence_minimal`` and ``evidence_context_ops`` (the other operations weakened so).
    """
    started = perf_counter()
    deadline = None if time_limit_s is None else started + time_limit_s
    kept = sorted((op for op in ops if op.status != "fail"), key=lambda op: op.index)
    for op in kept:
        assert op.status in ("ok", "info"), op
        assert op.status == "ok" or op.ret == math.inf, f"info operation must be open: {op}"
    partitions = [sorted(part, key=lambda op: op.index) for part in model.partition(kept)]
    details: dict[str, Any] = {"ops": len(kept), "partitions": len(partitions)}

    def finish(valid: bool | None, reason: str, evidence: tuple[Op, ...] = ()) -> Verdict:
        details["check_seconds"] = round(perf_counter() - started, 6)
        return Verdict(valid, reason, evidence, details)

    try:
        failing = _first_violation(partitions, model, deadline)
    except _OutOfTime:
        return finish(None, f"time limit of {time_limit_s} s hit before every partition was "
                      "checked")
    except _OutOfMemory:
        longest = max(len(part) for part in partitions)
        return finish(None, f"memory bound of {_SEARCH_BYTES_MAX // 2**20} MiB hit before "
                      f"every partition was checked (longest: {longest} operations)")
    if failing is None:
        return finish(True, f"linearizable: {len(kept)} operations in {len(partitions)} "
                      f"partition{'s' if len(partitions) != 1 else ''}")
    part = partitions[failing]
    evidence, context, minimal = _minimal_evidence(part, model, deadline)
    details["evidence_minimal"] = minimal
    details["evidence_context_ops"] = len(context)
    return finish(False, f"{_describe_key(part[0].key)}: {len(evidence)} operations cannot be "
                  "linearized", tuple(evidence))

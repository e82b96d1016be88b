"""Operation histories: the record the linearizability checker reads, and its parsers.

A history is a list of :class:`Op`, one per client operation, in order of invocation
(``Op.index``). Each operation has an invocation time ``call`` and a completion time ``ret``.
Operation X happens-before Y iff ``X.ret < Y.call``; otherwise they are concurrent (equal
times count as concurrent, as in porcupine).

An operation ends in one of three ways (Jepsen's convention, see shared/STYLE.md):

* ``'ok'``   -- it happened, with the recorded ``output``. A failed compare-and-set is an
  observation (the register did not hold the expected value), so it is ``'ok'`` with
  ``output=False``. A timed-out read is ``'ok'`` with ``output=UNKNOWN``: a read has no
  effect, so all that is lost is what it saw.
* ``'fail'`` -- it definitely did not happen. The checker drops it.
* ``'info'`` -- unknown: it may have taken effect at any time after its invocation, or never.
  Its ``ret`` is ``math.inf`` (open until the end of the history) and its ``output`` is
  :data:`UNKNOWN`.

Three sources are parsed: Jepsen's etcd register logs (``'jepsen-etcd'``), Jepsen's EDN
key-value histories as kept by porcupine (``'porcupine-kv'``), and the journal records of our
own simulated etcd client (:func:`from_client_records`). The first two are specified in
shared/peers/jepsen-histories/README.md: there are no timestamps, file order is real-time
order, so the line number is the time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chaoskube.api.files import HISTORY_MAX_BYTES, TooLarge, read_limited

__all__ = [
    "UNKNOWN",
    "HistoryFormatError",
    "Op",
    "from_client_records",
    "load_history",
    "parse_jepsen_etcd",
    "parse_porcupine_kv",
]


class _Unknown:
    """The type of :data:`UNKNOWN`; there is exactly one instance."""

    __slots__ = ()
    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        # Pickling and deepcopy must give back the singleton: the checker tests `is UNKNOWN`.
        return "UNKNOWN"


UNKNOWN = _Unknown()
"""An output consistent with any state: a timed-out read, or any ``'info'`` operation."""

STATUSES = ("ok", "fail", "info")


@dataclass(frozen=True, slots=True)
class Op:
    index: int  # position in the history (order of invocation), 0-based
    process: int | str
    f: str  # 'read' | 'write' | 'cas' | 'get' | 'put' | 'append'
    key: str | None  # None for the single-register etcd files
    value: Any  # input: write N; cas (A, B); put/append string; None for reads
    output: Any  # read: value or None (absent); cas: True/False; get: string; or UNKNOWN
    status: str  # 'ok' | 'fail' | 'info'
    call: float  # invocation time
    ret: float  # completion time; math.inf for 'info' (open until the end)

    def to_json(self) -> dict[str, Any]:
        """A plain JSON-able dict. ``ret`` is None while open; UNKNOWN is the string "unknown"."""
        return {
            "index": self.index,
            "process": self.process,
            "f": self.f,
            "key": self.key,
            "value": list(self.value) if isinstance(self.value, tuple) else self.value,
            "output": "unknown" if self.output is UNKNOWN else self.output,
            "status": self.status,
            "call": self.call,
            "ret": None if self.ret == math.inf else self.ret,
        }


class HistoryFormatError(Exception):
    """A history that cannot be parsed. ``str(error)`` is one line: ``FILE:LINE: message``.

    ``line_number`` is 1-based; 0 means the file as a whole (unreadable, unknown format), and
    is then left out of the message.
    """

    def __init__(self, path: str, line_number: int, message: str) -> None:
        self.path = str(path)
        self.line_number = line_number
        self.message = " ".join(str(message).split())  # one line, always
        super().__init__(self.path, line_number, self.message)

    def __str__(self) -> str:
        if self.line_number:
            return f"{self.path}:{self.line_number}: {self.message}"
        return f"{self.path}: {self.message}"


def load_history(path: Any, fmt: str) -> list[Op]:
    """Read and parse a history file; ``fmt`` is ``'jepsen-etcd'`` or ``'porcupine-kv'``.

    Every failure -- unknown format, unreadable file, malformed line -- is a HistoryFormatError.
    """
    parsers = {"jepsen-etcd": parse_jepsen_etcd, "porcupine-kv": parse_porcupine_kv}
    if fmt not in parsers:
        raise HistoryFormatError(
            str(path), 0, f"unknown history format {fmt!r} (expected one of {sorted(parsers)})"
        )
    try:
        data = read_limited(path, HISTORY_MAX_BYTES, "a history")
        lines = data.decode("utf-8").splitlines()
    except TooLarge as error:
        raise HistoryFormatError(str(path), 0, str(error).removeprefix(f"{path}: ")) from None
    except UnicodeDecodeError as error:
        raise HistoryFormatError(str(path), 0, f"cannot read history: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise HistoryFormatError(str(path), 0, f"cannot read history: {error.strerror or error}") from None
    return parsers[fmt](lines, source=str(path))


class _Builder:
    """Pairs invocations with completions, one open operation per process.

    Times are whatever the parser passes (line numbers for the Jepsen files).
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.ops: list[Op | None] = []
        self.open: dict[Any, tuple[int, str, str | None, Any, float]] = {}

    def error(self, line_number: int, message: str) -> HistoryFormatError:
        return HistoryFormatError(self.source, line_number, message)

    def invoke(self, line_number: int, process: Any, f: str, key: str | None, value: Any,
               time: float) -> None:
        if process in self.open:
            raise self.error(
                line_number, f"process {process} invokes {f} while its {self.open[process][1]}"
                " is still open")
        self.open[process] = (len(self.ops), f, key, value, time)
        self.ops.append(None)

    def complete(self, line_number: int, process: Any, f: str, key: str | None, status: str,
                 output: Any, time: float) -> None:
        assert status in STATUSES, status
        if process not in self.open:
            raise self.error(line_number, f"process {process} completes {f} but has no open "
                             "operation")
        index, open_f, open_key, value, call = self.open.pop(process)
        if open_f != f or open_key != key:
            raise self.error(line_number, f"process {process} completes {f} {key!r} but its "
                             f"open operation is {open_f} {open_key!r}")
        if time < call:
            raise self.error(line_number, f"completion at {time} precedes invocation at {call}")
        if status == "info":
            output, time = UNKNOWN, math.inf
        self.ops[index] = Op(index, process, f, key, value, output, status, call, time)

    def finish(self) -> list[Op]:
        # Operations never completed are indeterminate: open until the end, like 'info'.
        for process, (index, f, key, value, call) in self.open.items():
            self.ops[index] = Op(index, process, f, key, value, UNKNOWN, "info", call, math.inf)
        self.open.clear()
        ops = self.ops
        assert all(op is not None for op in ops)
        return ops  # type: ignore[return-value]


# -- Jepsen etcd register logs ---------------------------------------------------------------

_ETCD_LINE = re.compile(
    r"^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:(read|write|cas)\s+(.*?)\s*$"
)
_INT = re.compile(r"-?\d+")
_PAIR = re.compile(r"\[\s*(-?\d+)\s+(-?\d+)\s*\]")


def _etcd_value(text: str) -> Any:
    if text == "nil":
        return None
    if _INT.fullmatch(text):
        return int(text)
    pair = _PAIR.fullmatch(text)
    if pair:
        return (int(pair.group(1)), int(pair.group(2)))
    if text == ":timed-out":
        return text
    raise ValueError(f"unrecognised value {text!r}")


def parse_jepsen_etcd(lines: Iterable[str], source: str = "<string>") -> list[Op]:
    """Parse Jepsen's etcd register log (``INFO jepsen.util - P :type :f value`` lines).

    Rules (shared/peers/jepsen-histories/README.md): ``:ok :read N|nil`` reads N or absent;
    ``:ok :cas`` output True; ``:fail :cas`` is an observation (status 'ok', output False);
    ``:fail :read :timed-out`` completes there with output UNKNOWN; any other ``:fail`` did not
    happen (status 'fail'); ``:info`` stays open until the end (status 'info').
    Blank lines are skipped.
    """
    builder = _Builder(source)
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        match = _ETCD_LINE.match(line)
        if not match:
            raise builder.error(line_number, f"not a jepsen.util operation line: {line[:120]!r}")
        process, kind, f, raw = int(match.group(1)), match.group(2), match.group(3), match.group(4)
        try:
            value = _etcd_value(raw)
        except ValueError as error:
            raise builder.error(line_number, str(error)) from None
        time = float(line_number)
        if kind == "invoke":
            expected = {"read": value is None, "write": type(value) is int,
                        "cas": type(value) is tuple}[f]
            if not expected:
                raise builder.error(line_number, f"bad argument for :invoke :{f}: {raw!r}")
            builder.invoke(line_number, process, f, None, value, time)
            continue
        status, output = kind, None
        if kind == "info":
            output = UNKNOWN
        elif f == "read":
            if kind == "fail":
                if value == ":timed-out":  # a read has no effect: it happened, saw unknown
                    status, output = "ok", UNKNOWN
            elif value is None or type(value) is int:
                output = value
            else:
                raise builder.error(line_number, f"bad read result {raw!r}")
        elif f == "cas":
            if type(value) is not tuple:
                raise builder.error(line_number, f"bad cas completion value {raw!r}")
            status, output = "ok", kind == "ok"
        builder.complete(line_number, process, f, None, status, output, time)
    return builder.finish()


# -- porcupine's key-value histories (Jepsen EDN maps) ----------------------------------------

_KV_LINE = re.compile(
    r'^\{:process (\d+), :type :(invoke|ok|fail|info), :f :(get|put|append), '
    r':key "([^"]*)", :value (nil|"[^"]*")\}\s*$'
)


def parse_porcupine_kv(lines: Iterable[str], source: str = "<string>") -> list[Op]:
    """Parse porcupine's key-value histories (``{:process P, :type :ok, :f :get, ...}`` lines).

    ``:ok :get`` carries the string read (nil is read as ""); ``:ok :put``/``:append`` echo the
    argument. ``:fail`` did not happen; ``:info`` stays open until the end. Blank lines are
    skipped.
    """
    builder = _Builder(source)
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        match = _KV_LINE.match(line)
        if not match:
            raise builder.error(line_number, f"not a key-value operation map: {line[:120]!r}")
        process, kind, f, key, raw = (int(match.group(1)), match.group(2), match.group(3),
                                      match.group(4), match.group(5))
        value = None if raw == "nil" else raw[1:-1]
        time = float(line_number)
        if kind == "invoke":
            if (f == "get") != (value is None):
                raise builder.error(line_number, f"bad argument for :invoke :{f}: {raw}")
            builder.invoke(line_number, process, f, key, value, time)
            continue
        output = None
        if kind == "ok" and f == "get":
            output = "" if value is None else value
        builder.complete(line_number, process, f, key, kind, output, time)
    return builder.finish()


# -- our own simulated etcd client's journal ---------------------------------------------------

_CLIENT_PHASES = ("invoke", "ok", "fail", "info")
_CLIENT_FS = ("read", "write", "cas")


def from_client_records(records: Iterable[Mapping[str, Any]], source: str = "<journal>"
                        ) -> list[Op]:
    """Build a history from the simulated client's ``{"type": "client-op", ...}`` records.

    Records of any other type are ignored. An invocation and its completion share ``client``
    and ``op_id``. ``fail`` completions are kept with status 'fail' (the checker drops them);
    ``info`` completions and operations never completed are open until the end. Indexes follow
    invocation order (time, then record order). Malformed records raise HistoryFormatError
    naming the record's position (1-based) in ``records``.
    """
    invokes: dict[tuple[Any, Any], tuple[int, Mapping[str, Any]]] = {}
    completions: dict[tuple[Any, Any], tuple[int, Mapping[str, Any]]] = {}
    for number, record in enumerate(records, start=1):
        if not isinstance(record, Mapping) or record.get("type") != "client-op":
            continue
        for name in ("phase", "client", "op_id", "t"):
            if name not in record:
                raise HistoryFormatError(source, number, f"client-op record lacks {name!r}")
        phase, t = record["phase"], record["t"]
        if phase not in _CLIENT_PHASES:
            raise HistoryFormatError(source, number, f"unknown phase {phase!r}")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or math.isnan(t):
            raise HistoryFormatError(source, number, f"bad time {t!r}")
        pair = (record["client"], record["op_id"])
        if phase == "invoke":
            if record.get("f") not in _CLIENT_FS:
                raise HistoryFormatError(source, number, f"unknown operation {record.get('f')!r}")
            if pair in invokes:
                raise HistoryFormatError(source, number, f"client {pair[0]!r} invokes op_id "
                                         f"{pair[1]!r} twice")
            invokes[pair] = (number, record)
        else:
            if pair not in invokes:
                raise HistoryFormatError(source, number, f"completion of op_id {pair[1]!r} of "
                                         f"client {pair[0]!r} before its invocation")
            if pair in completions:
                raise HistoryFormatError(source, number, f"op_id {pair[1]!r} of client "
                                         f"{pair[0]!r} completes twice")
            completions[pair] = (number, record)

    ordered = sorted(invokes.items(), key=lambda item: (item[1][1]["t"], item[1][0]))
    ops: list[Op] = []
    for index, (pair, (number, invoke)) in enumerate(ordered):
        f = invoke["f"]
        value = invoke.get("value")
        if f == "cas":
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise HistoryFormatError(source, number, f"cas value must be [from, to], not "
                                         f"{value!r}")
            value = tuple(value)
        elif f == "read":
            value = None
        completion = completions.get(pair)
        if completion is None or completion[1]["phase"] == "info":
            ops.append(Op(index, pair[0], f, invoke.get("key"), value, UNKNOWN, "info",
                          invoke["t"], math.inf))
            continue
        done_number, done = completion
        if done["t"] < invoke["t"]:
            raise HistoryFormatError(source, done_number, f"completion at {done['t']} precedes "
                                     f"invocation at {invoke['t']}")
        status = done["phase"]
        output = done.get("output")
        if status == "ok" and f == "cas" and not isinstance(output, bool):
            raise HistoryFormatError(source, done_number, f"cas output must be true/false, not "
                                     f"{output!r}")
        if f == "write" or status == "fail":
            output = None
        ops.append(Op(index, pair[0], f, invoke.get("key"), value, output, status,
                      invoke["t"], done["t"]))
    return ops

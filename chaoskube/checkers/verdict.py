"""The one result type every checker returns.

A checker is a pure function of a history or a journal. It answers ``valid`` = True, False
or None (unknown) with a one-line ``reason`` and, on a violation, the shortest slice of
history that shows it (``evidence``). A checker that crashes answers unknown, never True
(see :func:`run_checker`). Composition keeps the worst answer (:func:`worst`).

An unknown has two causes a reader must tell apart: judging failed or could not finish (a
crash, a budget, a journal without the history it needs), or the run held nothing this
checker judges (no webhook was called, no PodDisruptionBudget was stored). The second is
built with :func:`nothing_to_judge`, which marks the verdict (``details["nothing_to_judge"]``),
so that a run whose faults were changed -- a faults file, ``explore --guided``'s mutants --
can leave such a checker out instead of counting its unknown (experiments/result.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Verdict:
    valid: bool | None
    reason: str
    evidence: tuple[Any, ...] = field(default=())
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return {True: "true", False: "false", None: "unknown"}[self.valid]

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.label,
            "reason": self.reason,
            "evidence": [_plain(item) for item in self.evidence],
            "details": {key: _plain(value) for key, value in sorted(self.details.items())},
        }


def _plain(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


#: The ``details`` key that marks an unknown as "nothing to judge" (module doc).
NOTHING_TO_JUDGE = "nothing_to_judge"


def nothing_to_judge(reason: str, evidence: Sequence[Any] = (), details: dict[str, Any] | None = None) -> Verdict:
    """Unknown because the run held nothing this checker judges (module doc); ``reason``
    says what was missing."""
    return Verdict(None, reason, tuple(evidence), {**(details or {}), NOTHING_TO_JUDGE: True})


def judged_nothing(verdict: Verdict) -> bool:
    """Whether ``verdict`` is an unknown built by :func:`nothing_to_judge`."""
    return verdict.valid is None and bool(verdict.details.get(NOTHING_TO_JUDGE))


_RANK = {False: 0, None: 1, True: 2}


def worst(verdicts: Sequence[Verdict]) -> Verdict:
    """Compose verdicts: false beats unknown beats true. Empty input is unknown."""
    if not verdicts:
        return Verdict(None, "no checker ran")
    return min(verdicts, key=lambda verdict: _RANK[verdict.valid])


def run_checker(checker: Callable[..., Verdict], *args: Any, **kwargs: Any) -> Verdict:
    """Run a checker; a crash becomes unknown (never true), with the error as the reason."""
    try:
        verdict = checker(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - a crashing checker must not pass
        return Verdict(None, f"checker crashed: {type(error).__name__}: {error}")
    assert isinstance(verdict, Verdict), f"{checker!r} returned {verdict!r}, not a Verdict"
    return verdict

"""The three outcomes of a request/response call over the simulated network.

- :class:`Ok` — the reply arrived before the deadline.
- :class:`Failed` — the request definitely did not take effect: the destination refused
  the connection (its process is stopped) or the server answered with an error.
- :class:`Unknown` — the deadline passed with no answer: the request may or may not have
  taken effect (it may have been lost, or its reply may have been).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Ok:
    value: Any

    ok = True


@dataclass(frozen=True, slots=True)
class Failed:
    reason: str
    value: Any = None

    ok = False


@dataclass(frozen=True, slots=True)
class Unknown:
    reason: str

    ok = False


Outcome = Ok | Failed | Unknown

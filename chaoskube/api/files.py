"""Bounded reads of the files users hand the tool: experiment files, manifests, histories,
run directories.

Every file chaoskube reads on a user's behalf is read through :func:`read_limited`, with a
cap chosen for its kind (below): a file over its cap is refused in one line that names
the file, its cap and what to do, instead of being read until memory runs out
(``/dev/zero`` given as a manifest, a 50 MB manifest, a journal where a history was
meant). The read stops at the cap plus one byte, so even an endless file costs at most
the cap. A directory, a missing file or an unreadable one raises the ``OSError`` the
operating system gives; callers turn it into their own one-line error.

Caps, and why:

- experiment files: :data:`EXPERIMENT_MAX_BYTES` (1 MiB). They are written by hand or by
  ``chaoskube.testing.save_experiment``; a saved example of the machine's longest run
  (1,000 steps) is under 200 KiB.
- manifest files: :data:`MANIFEST_MAX_BYTES` (4 MiB per file) and
  :data:`MANIFESTS_TOTAL_MAX_BYTES` (16 MiB per workload). kube-apiserver refuses a request
  body over 3 MiB (``MaxRequestBodyBytes`` in ``k8s.io/apiserver/pkg/server/config.go``),
  so no single object is larger; a workload of many objects spreads over several files.
- histories (``check-history``): :data:`HISTORY_MAX_BYTES` (64 MiB): about 800,000
  operations of a Jepsen etcd history (the largest of shared/peers is 64 KiB).
- a run's ``result.json``: :data:`RESULT_MAX_BYTES` (64 MiB; evidence is capped far below).
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "EXPERIMENT_MAX_BYTES",
    "HISTORY_MAX_BYTES",
    "MANIFESTS_TOTAL_MAX_BYTES",
    "MANIFEST_MAX_BYTES",
    "RESULT_MAX_BYTES",
    "TooLarge",
    "human_bytes",
    "read_limited",
]

EXPERIMENT_MAX_BYTES = 1024 * 1024
MANIFEST_MAX_BYTES = 4 * 1024 * 1024
MANIFESTS_TOTAL_MAX_BYTES = 16 * 1024 * 1024
HISTORY_MAX_BYTES = 64 * 1024 * 1024
RESULT_MAX_BYTES = 64 * 1024 * 1024


class TooLarge(ValueError):
    """A file over its cap. ``str(error)`` is one line: the file, the cap, what to do."""


def human_bytes(count: int) -> str:
    """``1048576`` -> ``1 MiB``; ``1536`` -> ``1.5 KiB``."""
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:g} {unit}" if unit != "bytes" else f"{count} bytes"
        value /= 1024
    raise AssertionError("unreachable")


def read_limited(path: str | Path, limit_bytes: int, what: str) -> bytes:
    """The bytes of ``path``, or :class:`TooLarge` when it holds more than
    ``limit_bytes``. ``what`` names the kind of file in the message ("an experiment
    file"). Raises ``OSError`` when the file cannot be opened or read."""
    assert limit_bytes > 0, limit_bytes
    with open(path, "rb") as file:
        data = file.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise TooLarge(f"{path}: larger than {human_bytes(limit_bytes)}, the most chaoskube reads as {what}; is it the file you meant?")
    return data

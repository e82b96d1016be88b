"""``python -m chaoskube.experiments.replay_example FILE --out DIR [--seed N] [--judged-only]``:
replay a saved Hypothesis example (an experiment file of the ``hypothesis`` system), as
``chaoskube run FILE`` does, in a fresh process — the pytest plugin
(chaoskube/testing/plugin.py) runs it to check that a saved example replays.

:func:`mark_fixed` (``chaoskube mark-fixed FILE``) replays a saved example that is expected
to fail and, when it now passes, rewrites it as ``expected: pass``.

``--judged-only`` then drops from the file and the result the checkers that had nothing to
judge (unknown), so the saved regression judges what the example judged; the journal, and
so the fingerprint, does not depend on the checker list. Prints one JSON line; exit 0 as
expected, 1 not, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import orjson
from loguru import logger

from chaoskube.api.files import EXPERIMENT_MAX_BYTES, read_limited
from chaoskube.api.manifests import load_yaml_value
from chaoskube.experiments.model import ExperimentError
from chaoskube.experiments.registry import load_experiment
from chaoskube.experiments.reports import write_result
from chaoskube.experiments.systems.hypothesis import HypothesisSystem, run_hypothesis_experiment
from chaoskube.testing.experiment import write_document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaoskube.experiments.replay_example")
    parser.add_argument("file", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--judged-only", action="store_true")
    options = parser.parse_args(argv)
    logger.remove()  # as the CLI does: run.log has the lines; stderr gets warnings only
    logger.add(sys.stderr, level="WARNING", format="{level}: {message}")
    try:
        experiment = load_experiment(options.file)
        if experiment.system != HypothesisSystem.name:
            raise ExperimentError(f"{options.file}: field `system`: {experiment.system!r} is not 'hypothesis'")
        seed = options.seed if options.seed is not None else experiment.seed
        if seed is None:
            raise ExperimentError(f"{options.file}: field `seed`: missing; give --seed")
        result = run_hypothesis_experiment(experiment, seed, options.out)
    except ExperimentError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if options.judged_only and result.unknown:
        result = _drop_unknown(result)
        write_document({k: v for k, v in msgspec.yaml.decode(options.file.read_bytes()).items()} | {"checkers": list(result.experiment.checkers)}, options.file)
    summary = {"fingerprint": result.journal_sha256, "as_expected": result.as_expected, "failing": result.failing, "unknown": result.unknown, "out_dir": str(result.out_dir), "checkers": list(result.experiment.checkers)}
    print(orjson.dumps(summary).decode())
    return 0 if result.as_expected else 1


@dataclass(frozen=True)
class MarkFixed:
    """What :func:`mark_fixed` found: whether the example now passes, the replay's result,
    and the checkers it now judges."""

    fixed: bool
    result: Any
    checkers: list[str]
    reason: str


def mark_fixed(path: Path, out_dir: Path, seed: int | None = None) -> MarkFixed:
    """Replay a saved example (``system: hypothesis``) expected to fail; if every checker
    that can judge it now passes, rewrite the file as ``expected: pass`` with those
    checkers (the liveness phase's ``convergence`` too, once the example reaches it), the
    old failure kept in its description. The file is left as it was when the example still
    fails. ExperimentError (one line) for a file that is not a saved example."""
    from chaoskube.experiments.runner import run_experiment

    experiment = load_experiment(path)
    if experiment.system != HypothesisSystem.name:
        raise ExperimentError(f"{path}: field `system`: mark-fixed is for saved Hypothesis examples (system: hypothesis), not {experiment.system!r}")
    if experiment.expected.outcome == "pass":
        raise ExperimentError(f"{path}: field `expected.outcome`: already pass; nothing to mark")
    seed = seed if seed is not None else experiment.seed
    if seed is None:
        raise ExperimentError(f"{path}: field `seed`: missing; give --seed")
    every = list(HypothesisSystem.checkers())
    trial = msgspec.structs.replace(experiment, checkers=every, expected=msgspec.structs.replace(experiment.expected, outcome="pass", failing=[], may_fail=[]))
    result = run_experiment(trial, seed, out_dir)
    judged = [name for name in every if name not in result.unknown]
    failing = [name for name in judged if result.verdicts[name].valid is False]
    if result.interrupted:
        return MarkFixed(False, result, judged, "the replay was interrupted")
    if failing:
        first = failing[0]
        return MarkFixed(False, result, judged, f"{first} still fails: {result.verdicts[first].reason}")
    document = load_yaml_value(read_limited(path, EXPERIMENT_MAX_BYTES, "an experiment file"), str(path))
    was = experiment.expected
    note = f"Fixed (chaoskube mark-fixed, seed {seed}, journal sha256 {result.journal_sha256}): it failed {', '.join(was.failing)}" + (f" ({was.failure_mode})" if was.failure_mode else "") + "."
    document["description"] = f"{str(document.get('description', '')).rstrip()}\n{note}\n"
    document["checkers"] = judged
    document["expected"] = {"outcome": "pass"}
    write_document(document, path)
    load_experiment(path)  # what was written loads
    return MarkFixed(True, result, judged, f"every checker passed: {', '.join(judged)}")


def _drop_unknown(result: Any) -> Any:
    keep = [name for name in result.experiment.checkers if name not in result.unknown]
    result.experiment = msgspec.structs.replace(result.experiment, checkers=keep)
    result.verdicts = {name: verdict for name, verdict in result.verdicts.items() if name in keep}
    write_result(result)
    return result


if __name__ == "__main__":
    sys.exit(main())

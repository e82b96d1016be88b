"""``python -m chaoskube.experiments.replay_example FILE --out DIR [--seed N] [--judged-only]``:
replay a saved Hypothesis example (an experiment file of the ``hypothesis`` system), as
``chaoskube run FILE`` does, in a fresh process — the pytest plugin
(chaoskube/testing/plugin.py) runs it to check that a saved example replays.

``--judged-only`` then drops from the file and the result the checkers that had nothing to
judge (unknown), so the saved regression judges what the example judged; the journal, and
so the fingerprint, does not depend on the checker list. Prints one JSON line; exit 0 as
expected, 1 not, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import msgspec
import orjson
from loguru import logger

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


def _drop_unknown(result: Any) -> Any:
    keep = [name for name in result.experiment.checkers if name not in result.unknown]
    result.experiment = msgspec.structs.replace(result.experiment, checkers=keep)
    result.verdicts = {name: verdict for name, verdict in result.verdicts.items() if name in keep}
    write_result(result)
    return result


if __name__ == "__main__":
    sys.exit(main())

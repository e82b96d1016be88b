"""The real-manifests measurement (issue 14): every manifest set of
``../shared/peers/k8s-manifests`` (each directory holding YAML) under ``node-failure``.

For each set, as a user would: ``chaoskube run node-failure --manifests DIR`` — either it
runs, or it is refused in one line (which names the file, the document and the kind or
field). A refused set is then run with ``--skip-unsupported`` (the documents left out are
listed). Printed per set: refused or not (and the line), the documents served and left
out, the run's outcome and the verdicts that were not true; then the totals: sets that run
as they are, sets that run with ``--skip-unsupported``, documents served of all documents,
and the kinds left out.

    python3 bench/corpus.py [--seed 1] [--corpus PATH] [--only SUBSTRING]

Figures are counts (no timing: this is a coverage measure, not a speed benchmark); the
wall seconds per run are printed for information.
"""

from __future__ import annotations

import argparse
import json
import collections
import sys
import tempfile
import time
from pathlib import Path

import yaml
from loguru import logger

from chaoskube.api.manifests import load_manifests
from chaoskube.experiments import registry
from chaoskube.experiments.model import ExperimentError
from chaoskube.experiments.runner import run_experiment

ROOT = Path(__file__).resolve().parents[1]


def manifest_sets(corpus: Path) -> list[Path]:
    return sorted({path.parent for path in corpus.rglob("*") if path.suffix in (".yaml", ".yml", ".json") and path.is_file()})


def count_documents(directory: Path) -> tuple[int, list[str]]:
    """(documents served, one line per document left out) with --skip-unsupported."""
    try:
        objects, issues = load_manifests(directory, skip_unsupported=True)
    except Exception as error:  # noqa: BLE001 - a malformed set (kubectl refuses it whole): nothing served
        documents = 0
        for path in sorted(directory.iterdir()):
            if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
                documents += sum(1 for document in yaml.safe_load_all(path.read_text()) if document) if path.suffix != ".json" else 1
        return 0, [str(error)] * max(documents, 1)
    return len(objects), [str(issue) for issue in issues]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "peers" / "k8s-manifests")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    logger.remove()  # as the CLI does: each run's log goes to its run.log only
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}", file=sys.stderr)
        return 2
    experiment = registry.find("node-failure")
    served_total = left_total = 0
    as_is = skipped_runs = failed_to_run = 0
    kinds_left: collections.Counter[str] = collections.Counter()
    sets = [path for path in manifest_sets(args.corpus) if args.only in str(path)]
    for directory in sets:
        name = str(directory.relative_to(args.corpus))
        served, left = count_documents(directory)
        served_total += served
        left_total += len(left)
        for line in left:
            kinds_left[line.split(": ", 2)[-1][:80]] += 1
        refusal = None
        try:
            found = registry.with_manifests(experiment, directory)
        except ExperimentError as error:
            refusal = str(error)
            try:
                found = registry.with_manifests(experiment, directory, skip_unsupported=True)
            except ExperimentError as again:
                print(f"{name}: refused (documents served {served}, left out {len(left)}): {again}")
                failed_to_run += 1
                continue
        with tempfile.TemporaryDirectory(prefix="corpus-") as out:
            started = time.perf_counter()
            result = run_experiment(found, args.seed, Path(out))
            wall = time.perf_counter() - started
            answers = json.loads((Path(out) / "result.json").read_text()).get("answers") or {}
        not_true = {checker: verdict.label for checker, verdict in result.verdicts.items() if verdict.valid is not True}
        if refusal is None:
            as_is += 1
        else:
            skipped_runs += 1
        print(f"{name}: {'ran as it is' if refusal is None else 'refused, then ran with --skip-unsupported'}; documents served {served}, left out {len(left)}; "
              f"outcome {'as expected' if result.as_expected else 'NOT as expected'} ({wall:.1f} s wall); not true: {not_true or 'none'}")
        if refusal is not None:
            print(f"    refusal: {refusal}")
        for row in answers.get("workloads", []):
            if row.get("converged_at") is None:
                print(f"    never ready: {row['workload']} (desired {row['desired']}): {row.get('why') or '?'}")
        for note in found.notes:
            print(f"    note: {note}")
        for line in left:
            print(f"    left out: {line}")
    total = served_total + left_total
    print()
    print(f"manifest sets: {len(sets)}; ran as they are: {as_is}; ran with --skip-unsupported: {skipped_runs}; refused in one line: {failed_to_run}")
    print(f"documents served: {served_total} of {total} ({100 * served_total / max(total, 1):.1f}%); left out: {left_total}")
    for reason, count in kinds_left.most_common():
        print(f"    {count} x {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""False alarms with the adversarial tenants on (issue 19, "Measure"): the catalogue's
simulated experiments over a range of seeds, every Kubernetes experiment with its
workload's ``tenants`` switched on and the ``authorization`` checker added, each expected
to meet its own expected outcome as it does without them.

What it runs: for every catalogue experiment that ``chaoskube explore --all`` runs (the
real-process ones are left out), a copy written to ``OUT/experiments/NAME-tenants.yaml``
when its system is ``kubernetes``: ``workload.tenants: true`` (chaoskube.tenants' defaults:
every tenant, an attempt every 4 s, the ServiceAccount deleted after 20 s and re-created
60 s later) unless the experiment configures tenants already, ``authorization`` appended to
its checkers, relative manifest paths made absolute; nothing else changes (faults, phases,
expected outcome). The other systems' experiments run as they are (tenants are Kubernetes
identities). Then one ``chaoskube explore`` over all of them, into ``OUT/campaign``, each
run's replay command naming its copy.

Printed, after explore's own table: the runs and how many met their expected outcome; the
runs not as expected with the checkers that failed; over the tenants-on runs, the tenants'
attempts, how many the oracle judged (the others got no answer: 503s, timeouts under the
faults), the findings, the attempts refused as the policy says, and the longest
eventual-consistency window the ``authorization`` checker reported against its bound. Exit code: explore's (0 when every run was as expected).

    python3 bench/tenants_catalogue.py --seeds 1..3 [--jobs 1] [--out /tmp/tenants-catalogue]

The figures of issue 19's closing note were measured with ``--seeds 1..50 --jobs 2``
(docs/experiments.md, "Issue 19").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def tenants_on(path: Path, out: Path) -> Path:
    """The experiment file ``path`` with the tenants on, written under ``out``."""
    from chaoskube.experiments.systems.kubernetes import resolve_manifest

    data = yaml.safe_load(path.read_text())
    data["name"] = f"{data['name']}-tenants"
    workload = dict(data.get("workload") or {})
    if not workload.get("tenants"):
        workload["tenants"] = True
    manifests = workload.get("manifests") or []
    workload["manifests"] = [str(resolve_manifest(entry, path.parent)) for entry in manifests]  # as the original finds them
    if not workload["manifests"]:
        del workload["manifests"]
    data["workload"] = workload
    checkers = list(data.get("checkers") or [])
    if "authorization" not in checkers:
        checkers.append("authorization")
    data["checkers"] = checkers
    target = out / f"{data['name']}.yaml"
    target.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return target


def targets(out: Path) -> list[str]:
    """What explore runs: the tenants-on copies of the Kubernetes experiments, the names of
    the others (as ``explore --all`` chooses them)."""
    from chaoskube.experiments import registry
    from chaoskube.experiments.registry import SYSTEMS, catalog_paths

    out.mkdir(parents=True, exist_ok=True)
    paths = catalog_paths()
    chosen: list[str] = []
    for name in registry.names():
        experiment = registry.find(name)
        if getattr(SYSTEMS[experiment.system], "real_time", False):
            continue
        chosen.append(str(tenants_on(Path(paths[name]), out)) if experiment.system == "kubernetes" else name)
    return chosen


def figures(campaign: Path) -> dict[str, Any]:
    """Totals over the run directories of the campaign."""
    runs = as_expected = 0
    unexpected: list[str] = []
    totals = {"tenant runs": 0, "attempts": 0, "judged": 0, "findings": 0, "refused": 0, "unjudged": 0}
    longest, bound = 0.0, None
    for result_path in sorted(campaign.glob("*/result.json")):
        result = json.loads(result_path.read_text())
        runs += 1
        if result.get("as_expected"):
            as_expected += 1
        else:
            failing = sorted(name for name, verdict in result.get("verdicts", {}).items() if verdict.get("valid") in (False, "false"))
            unexpected.append(f"{result_path.parent.name}: failing {', '.join(failing) or 'none'}")
        verdict = result.get("verdicts", {}).get("authorization")
        if not verdict:
            continue
        details = verdict.get("details") or {}
        totals["tenant runs"] += 1
        totals["attempts"] += int(details.get("attempts", 0))
        totals["judged"] += int(details.get("judged", 0))
        totals["unjudged"] += sum(int(count) for count in (details.get("unjudged") or {}).values())
        for boundary in (details.get("per_boundary") or {}).values():
            totals["findings"] += int(boundary.get("findings", 0))
            totals["refused"] += int(boundary.get("refused", 0))
        longest = max(longest, float(details.get("longest_window_s") or 0.0))
        bound = details.get("lag_bound_s", bound)
    return {"runs": runs, "as_expected": as_expected, "unexpected": unexpected, **totals, "longest window s": longest, "lag bound s": bound}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seeds", default="1..3", help="explore's --seeds (default 1..3)")
    parser.add_argument("--jobs", type=int, default=1, help="explore's --jobs (default 1)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/tenants-catalogue"), help="where the copies and the campaign go")
    args = parser.parse_args()
    chosen = targets(args.out / "experiments")
    campaign = args.out / "campaign"
    command = [str(Path(sys.executable).with_name("chaoskube")), "explore", *chosen, "--seeds", args.seeds, "--jobs", str(args.jobs), "--out", str(campaign)]
    print("$ chaoskube explore <" + str(len(chosen)) + " experiments> --seeds " + args.seeds + " --jobs " + str(args.jobs) + " --out " + str(campaign), flush=True)
    code = subprocess.call(command)
    found = figures(campaign)
    print(f"runs: {found['runs']}, as expected: {found['as_expected']}")
    for line in found["unexpected"]:
        print(f"  not as expected: {line}")
    print(
        f"tenants on in {found['tenant runs']} runs: {found['attempts']} attempts, {found['judged']} judged by the oracle "
        f"({found['unjudged']} unjudged: no answer from the API), {found['findings']} findings, {found['refused']} refused as the policy says; "
        f"longest cache-lag window "
        f"{found['longest window s']:.3f} s (bound {found['lag bound s']} s)"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())

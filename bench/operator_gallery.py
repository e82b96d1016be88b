"""``chaoskube test-operator`` on every pair of docs/operators/gallery (the broken operator
and its fixed version), with no hint: the same command for all, the workload generated
from the CRD. Prints, per operator: plans generated, plans run, wall time, plans per hour,
found (plans with a finding), and the findings the learned mask removed; writes
OUT/gallery.json. Every broken operator must be found; every fixed one must pass. Each row
also says where a plan's wall time went (``breakdown``: mean seconds per plan in each part).

    python bench/operator_gallery.py [--budget N] [--repeats N] [--jobs N] [--speed F] [--kind KIND ...] [--no-mask] [--out runs/operator-gallery] [NAME ...]
    python bench/operator_gallery.py --sample-controller BINARY [--jobs N]

``--sample-controller BINARY``: the Go kubernetes/sample-controller instead (built by
shared/peers/sample-controller/build.sh), with its CRD (Foo, with the status subresource)
and no workload: one generated from the CRD's schema.

The Go pairs (GO_PAIRS: docs/operators/gallery/go/src/gallery/NAME and NAME_fixed, the
sample-controller's pattern) are built first, offline, with Go in GOPATH mode against the
client-go sources of shared/peers/sample-controller (``go_build``; a few seconds once Go's
build cache holds client-go), and run with the sample-controller's CRD. Name one as
``go/NAME``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "docs" / "operators" / "gallery"
#: name -> extra manifests beside the CRD
PAIRS = {
    "create_lost_response": [],
    "delete_without_finalizer": [],
    "memory_lost_on_restart": [],
    "status_from_stale_read": [],
    "adopt_without_owner_check": ["widget-notes.yaml"],
    "scale_down_forgets_pvcs": [],
    "delete_not_idempotent": [],
    "rollout_all_at_once": [],
    "stale_read_after_restart": [],
    "cleanup_on_observed_delete": [],
}


SAMPLE_CONTROLLER_GOPATH = ROOT.parent.parent / "shared" / "peers" / "sample-controller" / "gopath"
SAMPLE_CONTROLLER_CRD = SAMPLE_CONTROLLER_GOPATH / "src" / "k8s.io" / "sample-controller" / "artifacts" / "examples" / "crd-status-subresource.yaml"
#: The Go pairs: GOPATH (ours first) and the packages, each a main package NAME and NAME_fixed.
GO_GALLERY = GALLERY / "go"
GO_PAIRS = ["rename_leaves_deployment", "record_after_create"]


def go_build(package: str, out: Path, gopath: Path = SAMPLE_CONTROLLER_GOPATH) -> Path:
    """Build gallery/PACKAGE (docs/operators/gallery/go/src) to OUT/PACKAGE, offline: GOPATH
    mode with the sample-controller's vendored modules after ours (GO111MODULE=off, GOPROXY=off)."""
    go = shutil.which("go")
    if go is None:
        raise SystemExit("operator_gallery: no go on PATH (apt-get install -y golang-go)")
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": f"{GO_GALLERY}{os.pathsep}{gopath}", "GOFLAGS": "", "GOPROXY": "off"}
    binary = out / package
    built = subprocess.run([go, "build", "-o", str(binary), f"gallery/{package}"], env=env, capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise SystemExit(f"operator_gallery: go build gallery/{package} failed:\n{built.stderr[-3000:]}")
    return binary


def run(name: str, operator: str, extra: list[str], out: Path, budget: int, jobs: int | None, speed: float, kinds: list[str], more: list[str] = (), command: str = "", manifests: list[Path] = ()) -> dict:
    command = command or f"{sys.executable} -m kopf run --standalone -A {GALLERY / operator}"
    manifests = list(manifests) or [GALLERY / "widgets-crd.yaml", *[GALLERY / path for path in extra]]
    argv = [sys.executable, "-m", "chaoskube.experiments.cli", "test-operator", "--run", command, *[item for path in manifests for item in ("--manifests", str(path))],
            "--out", str(out), *(["--budget", str(budget)] if budget else []), *[item for kind in kinds for item in ("--kind", kind)], *(["--jobs", str(jobs)] if jobs else []), "--speed", str(speed), *more]
    started = time.perf_counter()
    load_before = os.getloadavg()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - started
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    load = [round(max(before, after), 1) for before, after in zip(load_before, os.getloadavg())]
    return {"operator": operator, "exit": done.returncode, "wall_s": round(wall, 1), "load_1_5_15": load, "plans_generated": summary.get("plans_generated"), "plans_unrepeated": summary.get("plans_unrepeated"), "plans_run": summary.get("plans_run"),
            "plans_per_hour": round(summary.get("plans_run", 0) / wall * 3600, 1) if summary else 0, "found": summary.get("found"), "errors": summary.get("errors"), "late": summary.get("late"), "jobs": summary.get("jobs"),
            "removed_by_mask": summary.get("findings_removed_by_mask"), "failing_only_without_mask": summary.get("plans_failing_only_without_mask"),
            "found_ids": [entry["id"] for entry in summary.get("results", []) if entry["status"] == "found"], "breakdown": breakdown(out, summary),
            "tail": done.stdout[-600:] + done.stderr[-600:] if not summary else ""}


#: Where a plan's wall time goes (session.json's wall and run.py's): the process start
#: (fork or interpreter) and its exit, the cluster's boot up to the front opening, the
#: CRDs applied and the operator watching, the workload's steps (each the operator's
#: reaction and the quiet spell), the stop (heal, recovery, checkers, result), the judging.
PARTS = ("start_s", "boot_s", "ready_s", "steps_s", "stop_s", "judge_s")
#: What a plan's processes used (session.json's wall): the session's CPU (the simulated
#: cluster, its front, the driver), the operator's, the cluster thread's wait for a CPU, and
#: how far the cluster's clock trailed the wall clock at worst.
USE = ("cpu_s", "operator_cpu_s", "runqueue_wait_s", "operator_runqueue_wait_s", "max_lag_s")


def breakdown(out: Path, summary: dict) -> dict:
    """Mean seconds per plan in each part (PARTS), per step, and the learning's wall."""
    plans = [entry for entry in summary.get("results", []) if entry.get("session_wall") and entry["id"] != "learning"]
    if not plans:
        return {}
    mean = lambda values: round(sum(values) / len(values), 2) if values else 0.0  # noqa: E731
    steps = [entry.get("step_walls") or [] for entry in plans]
    learning = json.loads((out / "learning.json").read_text()) if (out / "learning.json").exists() else {}
    walls = [float(entry["session_wall"].get("total_s", 0.0)) for entry in plans]
    used = [float(entry["session_wall"].get("cpu_s", 0.0)) + float(entry["session_wall"].get("operator_cpu_s", 0.0)) for entry in plans]
    return {"plan_s": mean([entry["wall_s"] for entry in plans]), **{part: mean([float(entry["session_wall"].get(part, 0.0)) for entry in plans]) for part in PARTS + USE},
            "cpu_per_wall_s": round(sum(used) / sum(walls), 3) if sum(walls) else 0.0, "worst_lag_s": max(float(entry["session_wall"].get("max_lag_s", 0.0)) for entry in plans),
            "per_step_s": [mean([walls[index] for walls in steps if index < len(walls)]) for index in range(max(map(len, steps), default=0))],
            "learning_s": learning.get("wall_s"), "tuning": learning.get("tuning")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*", default=[*PAIRS, *(f"go/{name}" for name in GO_PAIRS)], help="kopf pairs by name, Go pairs as go/NAME [default: all]")
    parser.add_argument("--budget", type=int, default=0, help="0: every plan test-operator selects by default")
    parser.add_argument("--jobs", type=int, default=None, help="test-operator --jobs [default: its own choice, from the learning runs' CPU]")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("runs/operator-gallery"))
    parser.add_argument("--fixed-only", action="store_true")
    parser.add_argument("--repeats", type=int, default=None, help="test-operator --repeats (0: every plan generated) [default: its own, 1]")
    parser.add_argument("--kind", dest="kinds", action="append", default=[], help="plan kinds (repeatable) [default: all]")
    parser.add_argument("--no-mask", action="store_true", help="judge without the learned mask")
    parser.add_argument("--quiet", type=float, default=0.0, help="test-operator --quiet (virtual seconds) [default: its own]")
    parser.add_argument("--learned-from", type=Path, default=None, metavar="OUT", help="reuse each operator's learning from an earlier --out (test-operator --learned): the same plans again")
    parser.add_argument("--sample-controller", type=Path, default=None, metavar="BINARY", help="the Go sample-controller (built by shared/peers/sample-controller/build.sh) instead of the gallery")
    parser.add_argument("--crd", type=Path, default=SAMPLE_CONTROLLER_CRD, help="with --sample-controller: its CRD [default: the peer's artifacts/examples/crd-status-subresource.yaml]")
    args = parser.parse_args()
    more = (["--no-mask"] if args.no_mask else []) + (["--quiet", str(args.quiet)] if args.quiet else []) + (["--repeats", str(args.repeats)] if args.repeats is not None else [])
    if args.sample_controller is not None:
        row = run("sample-controller", "sample-controller", [], args.out / "sample-controller", args.budget, args.jobs, args.speed, args.kinds, more,
                  command=f"exec {args.sample_controller.resolve()} -kubeconfig \"$KUBECONFIG\"", manifests=[args.crd])
        print(json.dumps(row), flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "sample-controller.json").write_text(json.dumps(row, indent=1))
        return 0 if row["plans_run"] else 1
    rows = []
    for name in args.names:
        if name not in PAIRS and name.removeprefix("go/") not in GO_PAIRS:
            parser.error(f"unknown pair {name!r}: one of {', '.join([*PAIRS, *(f'go/{go}' for go in GO_PAIRS)])}")
        go = name.startswith("go/")
        for operator in ([] if args.fixed_only else [f"{name}" if go else f"{name}.py"]) + [f"{name}_fixed" if go else f"{name}_fixed.py"]:
            stem = operator.removesuffix(".py").removeprefix("go/")
            learned = ["--learned", str(args.learned_from / stem)] if args.learned_from else []
            if go:
                binary = go_build(stem, args.out / "bin")
                row = run(name, operator, [], args.out / stem, args.budget, args.jobs, args.speed, args.kinds, more + learned,
                          command=f"exec {binary.resolve()} -kubeconfig \"$KUBECONFIG\"", manifests=[args.crd])
            else:
                row = run(name, operator, PAIRS[name], args.out / stem, args.budget, args.jobs, args.speed, args.kinds, more + learned)
            rows.append(row)
            print(json.dumps(row), flush=True)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "gallery.json").write_text(json.dumps(rows, indent=1))
    bad = [row["operator"] for row in rows if not row["plans_run"] or (row["operator"].removesuffix(".py").endswith("_fixed")) == bool(row["found"])]
    print("missed or false:", bad or "none")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

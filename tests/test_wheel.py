"""The package as users install it (issue 32): the wheel built from a clean copy of the
sources, installed with its dependencies into a fresh venv, and run from another directory —
so nothing can come from the checkout (CI installs with ``-e``, which sees every file of the
repository; a wheel holds only what pyproject.toml lists).

Every file the code opens from its own package at run time must be in the wheel: the
catalogue (``registry.CATALOG``), the schema (``schema.SHIPPED``) and the workloads that
catalogue entries name (``systems/kubernetes.WORKLOADS_DIR``). The test lists the catalogue,
dry-runs every entry, and runs one that loads a shipped workload file, writing its report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What a user's checkout holds that the build reads (the rest of the repository, tests and
#: docs, is not part of the package).
SOURCES = ("pyproject.toml", "README.md", "chaoskube", "faults", "experiments")


#: Run by the venv's python from another directory: `chaoskube run NAME --dry-run` through
#: the installed package's CLI entry point (chaoskube.experiments.cli:main) for each NAME;
#: prints {name: [exit code, stdout, stderr]} as JSON.
DRY_RUNS = """
import contextlib, io, json, sys
from loguru import logger
from chaoskube.experiments.cli import main
answers = {}
for name in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["run", name, "--dry-run"])
            code = 0
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else 1
    logger.remove()
    answers[name] = [code, out.getvalue(), err.getvalue()[-500:]]
print(json.dumps(answers))
"""


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _user_environment(venv: Path) -> dict[str, str]:
    """A shell as a user has it after activating the venv: no PYTHONPATH into the checkout."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "COV_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["COLUMNS"] = "200"
    return env


@pytest.mark.slow
def test_the_installed_wheel_lists_dry_runs_and_runs_the_catalogue(tmp_path: Path) -> None:
    started = time.monotonic()
    source = tmp_path / "checkout"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "*.pyc")
    for name in SOURCES:
        item = ROOT / name
        if item.is_dir():
            shutil.copytree(item, source / name, ignore=ignore)
        else:
            shutil.copy2(item, source / name)
    host_env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHONPATH")}
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)], tmp_path, host_env)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("chaoskube-*.whl")
    venv = tmp_path / "venv"
    created = _run([sys.executable, "-m", "venv", str(venv)], tmp_path, host_env)
    assert created.returncode == 0, created.stderr
    env = _user_environment(venv)
    installed = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], tmp_path, env, timeout=1200)
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run([str(venv / "bin" / "python"), "-c", "import chaoskube, chaoskube.experiments; print(chaoskube.__file__)"], elsewhere, env)
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(venv)), where.stdout  # the installed copy, not the checkout

    chaoskube = str(venv / "bin" / "chaoskube")
    catalogue = sorted(path.stem for path in (ROOT / "experiments" / "catalog").glob("*.yaml"))
    listed = _run([chaoskube, "list"], elsewhere, env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "CANNOT LOAD" not in listed.stdout
    assert [line.split(None, 1)[0] for line in listed.stdout.splitlines()] == catalogue

    # `chaoskube run NAME --dry-run` for every entry, through the installed CLI's main() in
    # one process of the venv (a process per entry costs 50 interpreter starts: minutes on
    # a loaded machine).
    dry = _run([str(venv / "bin" / "python"), "-c", DRY_RUNS, *catalogue], elsewhere, env, timeout=1200)
    assert dry.returncode == 0, dry.stderr[-3000:]
    answers = json.loads(dry.stdout.strip().splitlines()[-1])
    refused = {name: answer for name, answer in answers.items() if answer[0] != 0 or "checkers:" not in answer[1]}
    assert sorted(answers) == catalogue and not refused, refused

    # One short real run, of an entry whose workload is a shipped file (workloads/*.yaml).
    out = elsewhere / "runs" / "preemption"
    ran = _run([chaoskube, "run", "preemption-under-failover", "--seed", "1", "--out", "runs/preemption"], elsewhere, env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    payload = json.loads((out / "result.json").read_text())
    assert payload["experiment"] == "preemption-under-failover" and payload["as_expected"] is True
    assert (out / "report.md").read_text().startswith("# preemption-under-failover — seed 1")
    assert (out / "report.html").stat().st_size > 0 and (out / "junit.xml").is_file()
    print(
        f"\nwheel {wheel.name} ({wheel.stat().st_size // 1024} KiB) installed into a fresh venv; from {elsewhere.name}/: "
        f"`chaoskube list` exit 0, {len(catalogue)} entries; `run NAME --dry-run` exit 0 for all {len(catalogue)}; "
        f"`run preemption-under-failover --seed 1` exit 0, {payload['outcome']}, report.md/report.html/junit.xml written; "
        f"{time.monotonic() - started:.0f} s wall"
    )

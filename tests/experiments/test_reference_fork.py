"""The differential checker's reference, forked from the run's own boot
(experiments/simulated.py, ``_ReferenceFork``): the copy writes byte for byte the journal
and the cache entry that the reference run computed whole writes, the run's own journal
does not change, and a copy that dies leaves the run to compute its reference whole.

The forked runs are made by ``chaoskube run`` in a subprocess: a pytest-xdist worker has a
second thread (execnet's), and a run in a process with other threads does not fork."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from chaoskube.experiments import registry
from chaoskube.experiments.registry import SYSTEMS
from chaoskube.experiments.runner import run_experiment
from chaoskube.experiments.simulated import _ReferenceFork, fault_free, reference_key, reference_run


# random-nemesis: a random nemesis and BUGGIFY after the boot; node-drain-with-pdb: scheduled
# faults and workload steps. Both references cut the fault phase (fault_free), so the copy
# goes on with other phases than the run's.
@pytest.mark.parametrize(("name", "seed"), [("random-nemesis", 3), ("node-drain-with-pdb", 2)])
def test_a_forked_reference_writes_what_the_whole_reference_writes(name, seed, tmp_path):
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "run", name, "--seed", str(seed), "--out", str(out)], check=True, capture_output=True, timeout=600)
    result = json.loads((out / "result.json").read_text())
    details = result["verdicts"]["differential"]["details"]
    assert details["reference_forked"] is True and details["reference_cached"] is False

    experiment = registry.find(name)
    assert fault_free(experiment).phases.faults_s < experiment.phases.faults_s
    key = reference_key(experiment, seed, experiment.boot_seed)
    whole = reference_run(experiment, SYSTEMS[experiment.system], seed, tmp_path / "whole")
    assert not whole.forked and not whole.cached
    assert (out / "reference" / key / "journal.jsonl").read_bytes() == (tmp_path / "whole" / key / "journal.jsonl").read_bytes()
    assert (out / "reference" / f"{key}.json").read_bytes() == (tmp_path / "whole" / f"{key}.json").read_bytes()
    assert details["reference_journal_sha256"] == whole.journal_sha256

    # The run's own journal is the one a run that computes its reference whole writes
    # (this process has execnet's thread under xdist, and forks nothing then).
    again = run_experiment(experiment, seed, tmp_path / "again")
    assert again.journal_sha256 == result["journal_sha256"]
    assert (tmp_path / "again" / "journal.jsonl").read_bytes() == (out / "journal.jsonl").read_bytes()


def test_a_copy_that_died_leaves_no_reference_and_is_reaped(tmp_path):
    reference = _ReferenceFork(tmp_path, 0)
    pid = os.fork()
    if pid == 0:
        os._exit(1)  # died before writing its cache entry
    reference.pid, reference.path, reference.key = pid, tmp_path / "missing.json", "missing"
    assert reference.result() is None  # the run then computes the reference whole
    assert reference.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def test_an_abandoned_copy_is_killed_and_reaped(tmp_path):
    reference = _ReferenceFork(tmp_path, 0)
    pid = os.fork()
    if pid == 0:
        os.pause() if hasattr(os, "pause") else None
        os._exit(0)
    reference.pid = pid
    reference.abandon()
    assert reference.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)

"""Issue 32, as a new user meets the command line: a catalogue with an entry that cannot
load still lists the rest."""

from __future__ import annotations

import shutil

from tests.cli.test_bad_input import in_process  # noqa: F401 - a fixture
from tests.cli.test_cli import ROOT


def test_list_reports_an_entry_that_cannot_load_on_its_own_line_and_lists_the_rest(tmp_path, monkeypatch, in_process):  # noqa: F811
    from chaoskube.experiments import registry

    catalog = tmp_path / "catalog"
    catalog.mkdir()
    for name in ("etcd-leader-kill", "mesh-partition", "preemption-under-failover"):
        shutil.copy(ROOT / "experiments" / "catalog" / f"{name}.yaml", catalog)
    # As in a wheel without experiments/workloads/: the entry names a workload file that is not there.
    monkeypatch.setattr(registry, "CATALOG", catalog)
    monkeypatch.setattr("chaoskube.experiments.systems.kubernetes.WORKLOADS_DIR", tmp_path / "no-workloads")
    result = in_process("list")
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["etcd-leader-kill", "mesh-partition", "preemption-under-failover"]
    assert lines[0].split(None, 1)[1].startswith("Kill the etcd leader")
    broken = lines[2]
    assert "CANNOT LOAD" in broken and "workload.manifests[0]" in broken and "priority-preemption.yaml" in broken
    assert result.stderr.strip().splitlines() == ["chaoskube: error: 1 of 3 catalogue entries cannot load (listed above); the others can run"]


def test_list_of_a_whole_catalogue_exits_0(in_process):  # noqa: F811
    result = in_process("list")
    assert result.returncode == 0 and "CANNOT LOAD" not in result.stdout and not result.stderr
    assert len(result.stdout.splitlines()) == len(list((ROOT / "experiments" / "catalog").glob("*.yaml")))


def test_the_progress_line_never_reads_more_than_was_planned(tmp_path):
    """Issue 32: a run of etcd-leader-kill printed "100% (45.0 of 39.0 s planned)": the plan
    left out the boot and the recovery wait. It is now made again at every phase boundary."""
    import re

    from tests.cli.test_cli import chaoskube

    result = chaoskube("run", "etcd-leader-kill", "--seed", "1", "--out", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    lines = [re.fullmatch(r"etcd-leader-kill: (\d+)% \(([\d.]+) of ([\d.]+) s planned\)", line) for line in result.stderr.splitlines() if "planned" in line]
    assert lines and all(lines), result.stderr
    shown = [(int(m.group(1)), float(m.group(2)), float(m.group(3))) for m in lines]
    for percent, now, planned in shown:
        assert now <= planned and percent <= 100 * now / planned + 1e-9, shown
    assert [percent for percent, _, _ in shown] == sorted(percent for percent, _, _ in shown)
    percent, now, planned = shown[-1]
    assert percent == 100 and now == planned, shown  # the end: all of what ran

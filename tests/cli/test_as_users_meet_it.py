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


# =========================================================================== validate, describe, manifests as a set
SHOP = ROOT / "docs" / "examples" / "shop"


def split_promotions(directory):
    """docs/examples/shop/50-promotions.yaml as two files: the CRD, and its custom resources."""
    documents = (SHOP / "50-promotions.yaml").read_text().split("\n---\n")
    (directory / "crd.yaml").write_text(documents[0] + "\n")
    (directory / "promotions.yaml").write_text("\n---\n".join(documents[1:]) + "\n")
    return directory / "crd.yaml", directory / "promotions.yaml"


def test_validate_checks_a_multi_document_manifest_file_and_a_directory(tmp_path, in_process):  # noqa: F811
    result = in_process("validate", SHOP / "20-database.yaml", SHOP)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{SHOP / '20-database.yaml'}: valid manifests (3 object(s): 1 PodDisruptionBudget, 1 Service, 1 StatefulSet)",
        f"{SHOP}: valid manifests (15 object(s): 1 ConfigMap, 1 CustomResourceDefinition, 1 DaemonSet, 1 Deployment, 1 Ingress, 1 Namespace, "
        "2 PodDisruptionBudget, 2 Promotion, 1 Secret, 2 Service, 1 ServiceAccount, 1 StatefulSet)",
    ]
    crd, promotions = split_promotions(tmp_path)
    assert in_process("validate", crd, promotions).returncode == 0  # the files named are one set
    alone = in_process("validate", promotions)
    assert alone.returncode == 2 and alone.stdout.strip() == (
        f'{promotions}: document 1: no matches for kind "Promotion" in version "shop.example.com/v1": '
        "ensure CRDs are installed first (no CustomResourceDefinition in these manifests serves it)"
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text((SHOP / "20-database.yaml").read_text().replace("replicas: 3", "replicas: three"))
    refused = in_process("validate", broken)
    assert refused.returncode == 2 and "field `spec.replicas`" in refused.stdout and len(refused.stdout.splitlines()) == 1


def test_a_crd_in_one_file_of_workload_manifests_serves_the_custom_resources_of_another(tmp_path):
    from chaoskube.experiments import registry

    crd, promotions = split_promotions(tmp_path)
    (tmp_path / "namespace.yaml").write_text((SHOP / "00-namespace.yaml").read_text())
    (tmp_path / "web.yaml").write_text((SHOP / "30-web.yaml").read_text())
    experiment = (ROOT / "experiments" / "catalog" / "node-drain-with-pdb.yaml").read_text()
    experiment = experiment.replace("workload:\n  deployments:", "workload:\n  manifests: [namespace.yaml, promotions.yaml, crd.yaml, web.yaml]\n  deployments:")
    (tmp_path / "exp.yaml").write_text(experiment)
    found, problems = registry.check_experiment(tmp_path / "exp.yaml")
    assert problems == [] and found is not None
    from chaoskube.experiments.systems.kubernetes import KubernetesSystem

    _, workload = KubernetesSystem.options(found.cluster, found.workload, base_dir=tmp_path)
    system = KubernetesSystem.__new__(KubernetesSystem)
    system.workload = workload
    kinds = [obj.KIND for obj in system._workload_objects()]
    assert kinds.count("Promotion") == 2 and "CustomResourceDefinition" in kinds


def test_describe_takes_manifests_like_run(tmp_path, in_process):  # noqa: F811
    described = in_process("describe", "node-drain-with-pdb", "--manifests", SHOP)
    assert described.returncode == 0, described.stderr
    assert str(SHOP.resolve()) in described.stdout and "'deployments': []" in described.stdout
    missing = in_process("describe", "node-drain-with-pdb", "--manifests", tmp_path / "nowhere")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1 and "--manifests" in missing.stderr


def test_a_new_experiment_file_reports_every_field_error_at_once(tmp_path, in_process):  # noqa: F811
    text = (ROOT / "experiments" / "catalog" / "mesh-partition.yaml").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("source:")) + "\n"
    text = text.replace("kind: kill", "kind: explode", 1).replace("checkers: [", "checkers: [no-such-checker, ", 1)
    path = tmp_path / "new.yaml"
    path.write_text(text)
    result = in_process("validate", path)
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert [line.split(":", 2)[1].strip() for line in lines] == ["field `source`", "field `schedule[2]`", "field `checkers[0]`"], lines
    assert all(line.startswith(f"{path}: field `") for line in lines)
    assert "unknown fault kind 'explode'" in lines[1] and "unknown checker 'no-such-checker'" in lines[2]
    assert result.stderr.strip() == "chaoskube: error: 3 problem(s) in 1 of 1 file(s)"
    # A broken `system` leaves everything that depends on it unjudged: no guesses.
    (tmp_path / "nosystem.yaml").write_text(text.replace("system: mesh", "system: meshh"))
    only = in_process("validate", tmp_path / "nosystem.yaml").stdout.splitlines()
    assert [line.split(":", 2)[1].strip() for line in only] == ["field `source`", "field `system`", "field `schedule[2]`"], only

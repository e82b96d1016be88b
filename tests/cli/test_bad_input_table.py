"""Every bad input the tool can be given, as a table: each row is one command a user (or an
adversary) could type, and each must answer with exit code 2, exactly one line on stderr
that names the file, field or flag (the row's fragment), and no traceback — and must not
start a run (no run directory is made).

Rows: seeds beyond what the random tree takes (2**64 and up, negatives, not numbers) on the
command line, in experiment files, in ``--seeds`` and in a replayed result.json; experiment
files that are not YAML, not a mapping, several documents, duplicate keys, hostile
nesting and aliases, unknown and missing fields, wrong types, run names that would escape
``runs/``; phases, schedules (kinds, parameters, targets that match nothing in the cluster
the experiment builds, faults that outlast their phase), nemeses, checkers, expected
outcomes, gallery variants for another system, system options, probes; manifests and
histories that are endless (/dev/zero), too large, not UTF-8 or malformed; every flag's
bad values (``--out ''``, ``--time-limit nan``, ``--keep``, ``--jobs``); ``replay``,
``report``, ``validate``, ``mark-fixed`` and ``toxiproxy --listen`` given what they cannot
use. Most rows run in this process (they end before any run starts);
tests/cli/test_bad_input.py runs a few as a separate process, as a user would.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from chaoskube.api.files import EXPERIMENT_MAX_BYTES, HISTORY_MAX_BYTES, MANIFEST_MAX_BYTES
from tests.cli.test_bad_input import in_process  # noqa: F401 - the fixture

BIG = 2**64  # one more than the largest seed

K8S: dict[str, Any] = {
    "name": "shop",
    "title": "A shop under a node failure",
    "description": "d",
    "source": "s",
    "system": "kubernetes",
    "cluster": {"etcdMembers": 3, "apiServers": 1, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 3, "zones": ["zone-a", "zone-b", "zone-c"]}]},
    "workload": {"deployments": [{"name": "web", "replicas": 3, "service": True}], "traffic": True},
    "phases": {"setup_s": 30, "warmup_s": 2, "faults_s": 20, "recovery_s": 60, "settle_s": 2},
    "schedule": [{"at_s": 2, "kind": "kill", "target": "random:node", "duration_s": 10}],
    "checkers": ["steady-state"],
}
ETCD: dict[str, Any] = {
    "name": "kv",
    "title": "t",
    "description": "d",
    "source": "s",
    "system": "etcd",
    "cluster": {"members": 3},
    "workload": {"clients": 2, "keys": 2, "rate_per_s": 20},
    "phases": {"warmup_s": 1, "faults_s": 10, "recovery_s": 10, "settle_s": 1},
    "schedule": [{"at_s": 1, "kind": "kill", "target": "leader:etcd", "duration_s": 3}],
    "checkers": ["raft-safety", "steady-state"],
}
DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shop}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: shop}}\n  template:\n    metadata: {labels: {app: shop}}\n    spec: {containers: [{name: app, image: nginx}]}\n"


def edited(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``base`` with ``path`` (dots, [N]) set to ``value`` (``DELETE`` removes it)."""
    document = orjson.loads(orjson.dumps(base))
    parts = path.replace("[", ".[").split(".")
    target = document
    for part in parts[:-1]:
        target = target[int(part[1:-1])] if part.startswith("[") else target.setdefault(part, {})
    last = parts[-1]
    if last.startswith("["):
        target[int(last[1:-1])] = value
    elif value is DELETE:
        del target[last]
    else:
        target[last] = value
    return document


DELETE = object()


def write(tmp: Path, document: Any, name: str = "bad.yaml") -> Path:
    path = tmp / name
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False))
    return path


def sparse(tmp: Path, name: str, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk (a hole), past every cap."""
    path = tmp / name
    with open(path, "wb") as file:
        file.truncate(size)
    return path


def file_case(base: dict[str, Any], path: str, value: Any, *, command: str = "run") -> Any:
    def build(tmp: Path) -> list[Any]:
        experiment = write(tmp, edited(base, path, value))
        return {"run": ["run", experiment], "dry": ["run", experiment, "--dry-run"], "validate": ["validate", experiment], "explore": ["explore", experiment, "--seeds", "1"], "serve": ["serve", experiment]}[command]

    return build


def text_case(text: str, command: str = "run") -> Any:
    def build(tmp: Path) -> list[Any]:
        experiment = write(tmp, text)
        return [command, experiment] if command != "explore" else ["explore", experiment, "--seeds", "1"]

    return build


def args(*items: Any) -> Any:
    return lambda tmp: list(items)


def manifests_case(name: str, content: bytes | None = None, *, size: int | None = None, link: str | None = None) -> Any:
    def build(tmp: Path) -> list[Any]:
        directory = tmp / "manifests"
        directory.mkdir()
        (directory / "00-shop.yaml").write_text(DEPLOYMENT)
        target = directory / name
        if link is not None:
            target.symlink_to(link)
        elif size is not None:
            sparse(directory, name, size)
        else:
            target.write_bytes(content or b"")
        return ["run", "node-drain-with-pdb", "--manifests", directory, "--dry-run"]

    return build


def history_case(content: bytes | None = None, *, size: int | None = None, link: str | None = None, extra: tuple[str, ...] = ()) -> Any:
    def build(tmp: Path) -> list[Any]:
        path = tmp / "history.log"
        if link is not None:
            path.symlink_to(link)
        elif size is not None:
            sparse(tmp, "history.log", size)
        else:
            path.write_bytes(content or b"")
        return ["check-history", path, "--format", "jepsen-etcd", *extra]

    return build


def result_case(payload: Any) -> Any:
    def build(tmp: Path) -> list[Any]:
        run = tmp / "run"
        run.mkdir()
        (run / "result.json").write_bytes(payload if isinstance(payload, bytes) else json.dumps(payload).encode())  # json: seeds past 64 bits too
        return ["replay", run]

    return build


def result_payload(**changes: Any) -> dict[str, Any]:
    return {"experiment": "mesh-partition", "seed": 1, "journal_sha256": "ab" * 32, "replay": "chaoskube run mesh-partition --seed 1"} | changes


def busy_port() -> Any:
    def build(tmp: Path) -> list[Any]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        BUSY.append(sock)
        return ["toxiproxy", "--listen", f"127.0.0.1:{sock.getsockname()[1]}"]

    return build


BUSY: list[socket.socket] = []


def probe(**fields: Any) -> dict[str, Any]:
    return {"name": "p", "count": {"resource": "pods", "selector": "app=web"}} | fields


# (id, build(tmp) -> argv, fragment of the one-line error)
CASES: list[tuple[str, Any, str]] = [
    # ---------------------------------------------------------------- seeds
    ("seed-2**64", args("run", "mesh-partition", "--seed", str(BIG)), "not in the range 0<=x<=18446744073709551615"),
    ("seed-negative", args("run", "mesh-partition", "--seed", "-1"), "--seed"),
    ("seed-word", args("run", "mesh-partition", "--seed", "seven"), "'seven' is not a valid integer"),
    ("seed-float", args("run", "mesh-partition", "--seed", "1.5"), "--seed"),
    ("seed-huge-digits", args("run", "mesh-partition", "--seed", "9" * 5000), "--seed"),
    ("seeds-2**64", args("explore", "mesh-partition", "--seeds", str(BIG)), "above the largest seed"),
    ("seeds-range-to-2**64", args("explore", "mesh-partition", "--seeds", f"1..{BIG}"), "--seeds"),
    ("seeds-huge-digits", args("explore", "mesh-partition", "--seeds", "9" * 400), "a seed is between 0 and 2**64 - 1"),
    ("seeds-words", args("explore", "mesh-partition", "--seeds", "a..b"), "expected A..B"),
    ("seeds-empty", args("explore", "mesh-partition", "--seeds", ""), "expected A..B"),
    ("seeds-comma", args("explore", "mesh-partition", "--seeds", ","), "expected A..B"),
    ("seeds-open-end", args("explore", "mesh-partition", "--seeds", "1.."), "expected A..B"),
    ("seeds-open-start", args("explore", "mesh-partition", "--seeds", "..5"), "expected A..B"),
    ("seeds-reversed", args("explore", "mesh-partition", "--seeds", "5..1"), "is empty"),
    ("seeds-too-many", args("explore", "mesh-partition", "--seeds", "1..20000"), "more than 10000 seeds"),
    ("seeds-unicode-digits", args("explore", "mesh-partition", "--seeds", "١..٣"), "expected A..B"),
    ("seeds-negative", args("explore", "mesh-partition", "--seeds", "-1..3"), "expected A..B"),
    ("boot-seed-2**64", args("run", "mesh-partition", "--boot-seed", str(BIG)), "--boot-seed"),
    ("explore-boot-seed-negative", args("explore", "mesh-partition", "--seeds", "1", "--boot-seed", "-1"), "--boot-seed"),
    ("file-boot-seed-2**64", file_case(ETCD, "boot_seed", BIG), "field `boot_seed`"),
    ("file-boot-seed-word", file_case(ETCD, "boot_seed", "zero"), "field `boot_seed`"),
    ("serve-seed-2**64", args("serve", "--seed", str(BIG)), "--seed"),
    ("serve-out-empty", args("serve", "--out", ""), "an empty path"),
    ("serve-listen-remote", args("serve", "--listen", "10.0.0.1:6443"), "loopback only"),
    ("serve-listen-no-port", args("serve", "--listen", "localhost"), "give HOST:PORT"),
    ("serve-file-zone-typo", file_case(K8S, "schedule[0].target", "zone:zone-x", command="serve"), "no zone 'zone-x'"),
    ("serve-file-fault-outlasts-phase", file_case(K8S, "schedule[0].duration_s", 60, command="serve"), "clip_to_phase"),
    ("serve-etcd-experiment", file_case(ETCD, "name", "kv", command="serve"), "serve needs a kubernetes experiment"),
    ("file-seed-2**64", file_case(ETCD, "seed", BIG), "field `seed`"),
    ("file-seed-negative", file_case(ETCD, "seed", -5), "field `seed`: a seed is between 0 and 2**64 - 1"),
    ("file-seed-float", file_case(ETCD, "seed", 1.5), "field `seed`"),
    ("file-seed-word", file_case(ETCD, "seed", "one"), "field `seed`"),
    ("file-seed-bool", file_case(ETCD, "seed", True), "field `seed`"),
    ("replay-seed-2**64", result_case(result_payload(seed=BIG)), "field `seed`: a seed is an integer, not 1.8446744073709552e+19"),
    ("replay-seed-negative", result_case(result_payload(seed=-3)), "field `seed`: a seed is between 0 and 2**64 - 1"),
    ("replay-seed-text", result_case(result_payload(seed="1")), "field `seed`: a seed is an integer"),
    ("replay-seed-float", result_case(result_payload(seed=1.5)), "field `seed`: a seed is an integer"),
    # ---------------------------------------------------------------- experiment files: the file
    ("file-missing", args("run", "/nonexistent/chaoskube/x.yaml"), "cannot read: No such file or directory"),
    ("file-directory", lambda tmp: ["run", str(tmp) + "/"], "cannot read"),
    ("file-dev-zero", args("validate", "/dev/zero"), "larger than 1 MiB, the most chaoskube reads as an experiment file"),
    ("file-too-large", lambda tmp: ["run", sparse(tmp, "big.yaml", EXPERIMENT_MAX_BYTES + 1)], "larger than 1 MiB"),
    ("file-not-yaml", text_case("name: [unclosed\n"), "not valid YAML"),
    ("file-empty", text_case(""), "holds nothing, not an experiment"),
    ("file-list", text_case("- a\n- b\n"), "holds a list, not an experiment"),
    ("file-scalar", text_case("hello\n"), "holds a str, not an experiment"),
    ("file-two-documents", text_case(yaml.safe_dump(ETCD) + "---\n" + yaml.safe_dump(ETCD)), "holds more than one YAML document"),
    ("file-duplicate-top-key", text_case(yaml.safe_dump(ETCD) + "name: again\n"), "field `name`: duplicate key"),
    ("file-duplicate-nested-key", text_case(yaml.safe_dump(ETCD).replace("members: 3", "members: 3\n  members: 5")), "field `cluster.members`: duplicate key"),
    ("file-not-utf8", lambda tmp: ["run", _bytes(tmp, b"name: \xff\xfe\n")], "not UTF-8 text"),
    ("file-deep-nesting", text_case("name: " + "[" * 5000 + "]" * 5000 + "\n"), "nested more than 100 deep"),
    ("file-alias-bomb", text_case("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"), "more than 1000000 values after expanding YAML aliases"),
    ("file-binary", lambda tmp: ["run", _bytes(tmp, bytes(range(256)) * 8)], "bad.yaml"),
    ("file-unknown-field", file_case(ETCD, "colour", "blue"), "field `colour`: unknown field"),
    ("file-path-field", file_case(ETCD, "path", "/etc"), "field `path`: unknown field"),
    *[(f"file-missing-{field}", file_case(ETCD, field, DELETE), f"field `{field}`: missing (it is required)") for field in ("name", "title", "description", "source", "system", "checkers")],
    ("file-checkers-string", file_case(ETCD, "checkers", "raft-safety"), "field `checkers`"),
    ("file-phases-list", file_case(ETCD, "phases", [1, 2]), "field `phases`"),
    ("file-schedule-mapping", file_case(ETCD, "schedule", {"at_s": 1}), "field `schedule`"),
    ("file-nemesis-number", file_case(ETCD, "nemesis", 3), "field `nemesis`"),
    ("file-expected-string", file_case(ETCD, "expected", "pass"), "field `expected`"),
    ("file-broken-string", file_case(ETCD, "broken", "broken-raft"), "field `broken`"),
    ("file-probes-mapping", file_case(K8S, "probes", {"name": "x"}), "field `probes`"),
    ("file-steady-state-list", file_case(K8S, "steady_state", ["x"]), "field `steady_state`"),
    ("file-title-number", file_case(ETCD, "title", 3), "field `title`"),
    ("file-null-name", file_case(ETCD, "name", None), "field `name`"),
    # ---------------------------------------------------------------- run names
    *[(f"name-{label}", file_case(ETCD, "name", value), "field `name`") for label, value in (("dotdot", "../../etc"), ("absolute", "/tmp/x"), ("slash", "a/b"), ("dot-first", ".hidden"), ("dash-first", "-rf"), ("empty", ""), ("long", "x" * 200), ("newline", "a\nb"), ("unicode", "名前"), ("space", "a b"), ("dotdot-alone", ".."))],
    # ---------------------------------------------------------------- phases
    *[(f"phase-{field}-{label}", file_case(ETCD, f"phases.{field}", value), f"phases.{field}") for field in ("setup_s", "warmup_s", "faults_s", "recovery_s", "settle_s") for label, value in (("negative", -1), ("day", 10**6), ("text", "soon"))],
    ("phase-nan", text_case(yaml.safe_dump(ETCD).replace("faults_s: 10", "faults_s: .nan")), "field `phases.faults_s`: nan is not a JSON number"),
    ("phase-inf", text_case(yaml.safe_dump(ETCD).replace("faults_s: 10", "faults_s: .inf")), "field `phases.faults_s`: inf is not a JSON number"),
    ("phase-unknown", file_case(ETCD, "phases.chaos_s", 3), "field `phases.chaos_s`: unknown field"),
    # ---------------------------------------------------------------- schedule
    ("fault-unknown-kind", file_case(ETCD, "schedule[0].kind", "explode"), "unknown fault kind 'explode'"),
    ("fault-target-syntax", file_case(ETCD, "schedule[0].target", "etcd"), "bad target 'etcd'"),
    ("fault-target-selector", file_case(ETCD, "schedule[0].target", "boss:etcd"), "bad target 'boss:etcd'"),
    ("fault-target-empty-argument", file_case(ETCD, "schedule[0].target", "role:"), "bad target 'role:'"),
    ("fault-zone-typo", file_case(K8S, "schedule[0].target", "zone:zone-x"), "no zone 'zone-x' in this experiment (zones: zone-a, zone-b, zone-c)"),
    ("fault-zone-typo-dry-run", file_case(K8S, "schedule[0].target", "zone:zone-x", command="dry"), "no zone 'zone-x'"),
    ("fault-zone-typo-validate", file_case(K8S, "schedule[0].target", "zone:zone-x", command="validate"), "1 problem(s) in 1 of 1 file(s)"),
    ("fault-zone-typo-explore", file_case(K8S, "schedule[0].target", "zone:zone-x", command="explore"), "no zone 'zone-x'"),
    ("fault-zone-in-etcd-system", file_case(ETCD, "schedule[0].target", "zone:zone-a"), "its processes have no zone"),
    ("fault-role-typo", file_case(K8S, "schedule[0].target", "role:nodes"), "no process has role 'nodes'"),
    ("fault-random-role-typo", file_case(K8S, "schedule[0].target", "random:etcd-member"), "no process has role 'etcd-member'"),
    ("fault-name-typo", file_case(K8S, "schedule[0].target", "name:node-9"), "no process named 'node-9'"),
    ("fault-name-typo-etcd", file_case(ETCD, "schedule[0].target", "name:etcd-4"), "no process named 'etcd-4'"),
    ("fault-leader-without-election", file_case(K8S, "schedule[0].target", "leader:node"), "role 'node' elects no leader"),
    ("fault-leader-star", file_case(K8S, "schedule[0].target", "leader:*"), "leader:*"),
    ("fault-follower-single", lambda tmp: ["run", write(tmp, edited(edited(K8S, "cluster.etcdMembers", 1), "schedule[0].target", "follower:etcd"))], "has a single process"),
    ("fault-kubelet-stop-on-etcd", lambda tmp: ["run", write(tmp, edited(edited(K8S, "schedule[0].kind", "kubelet-stop"), "schedule[0].target", "role:etcd"))], "kubelet-stop applies to processes of role 'node'"),
    ("fault-webhook-error-no-webhooks", lambda tmp: ["run", write(tmp, edited(edited(K8S, "schedule[0].kind", "webhook-error"), "schedule[0].target", "role:node"))], "webhook-error applies to processes of role 'webhook'"),
    ("fault-split-too-small", lambda tmp: ["run", write(tmp, edited(edited(K8S, "schedule[0].kind", "split"), "schedule[0].target", "role:kube-apiserver"))], "split needs a group of at least 3"),
    ("fault-drain-without-api", lambda tmp: ["run", write(tmp, edited(ETCD, "schedule[0].kind", "drain"))], "needs a system with an API"),
    ("fault-at-negative", file_case(ETCD, "schedule[0].at_s", -1), "at_s must be a finite number >= 0"),
    ("fault-at-after-phase", file_case(ETCD, "schedule[0].at_s", 11), "falls after the fault phase"),
    ("fault-duration-zero", file_case(ETCD, "schedule[0].duration_s", 0), "duration_s must be a finite number > 0"),
    ("fault-duration-negative", file_case(ETCD, "schedule[0].duration_s", -2), "duration_s must be a finite number > 0"),
    ("fault-outlasts-phase", file_case(ETCD, "schedule[0].duration_s", 60), "outlasts the fault phase: at_s 1 + 60 > phases.faults_s = 10, so the heal would cut it to 9 s"),
    ("fault-outlasts-phase-validate", file_case(ETCD, "schedule[0].duration_s", 60, command="validate"), "problem(s)"),
    ("fault-clip-not-bool", lambda tmp: ["run", write(tmp, edited(edited(ETCD, "schedule[0].duration_s", 60), "schedule[0].clip_to_phase", "yes"))], "clip_to_phase"),
    ("fault-param-unknown", file_case(ETCD, "schedule[0].params", {"force": 1}), "has no parameter 'force'"),
    ("fault-param-range", lambda tmp: ["run", write(tmp, edited(edited(ETCD, "schedule[0].kind", "link-loss"), "schedule[0].params", {"loss": 2}))], "out of range"),
    ("fault-param-type", lambda tmp: ["run", write(tmp, edited(edited(ETCD, "schedule[0].kind", "clock-jump"), "schedule[0].params", {"seconds": "lots"}))], "must be a finite number"),
    ("fault-param-choice", lambda tmp: ["run", write(tmp, edited(edited(ETCD, "schedule[0].kind", "isolate"), "schedule[0].params", {"scope": "galaxy"}))], "must be one of peers, all"),
    ("fault-param-code", lambda tmp: ["run", write(tmp, edited(edited(K8S, "schedule[0].kind", "webhook-error"), "schedule[0].params", {"code": 200}))], "out of range"),
    ("fault-entry-unknown-field", file_case(ETCD, "schedule[0].whenever", 3), "field `schedule[0].whenever`: unknown field"),
    ("fault-entry-missing-kind", file_case(ETCD, "schedule[0].kind", DELETE), "field `schedule[0].kind`: missing"),
    # ---------------------------------------------------------------- nemesis
    ("nemesis-unknown-kind", file_case(K8S, "nemesis", {"kinds": ["meteor"], "window_s": 10}), "unknown nemesis kind 'meteor'"),
    ("nemesis-count", file_case(K8S, "nemesis", {"kinds": ["kill-apiserver"], "count": 1000, "window_s": 10}), "between 0 and 200"),
    ("nemesis-window", file_case(K8S, "nemesis", {"kinds": ["kill-apiserver"], "window_s": 100}), "falls after the fault phase"),
    ("nemesis-durations", file_case(K8S, "nemesis", {"kinds": ["kill-apiserver"], "window_s": 10, "min_duration_s": 9, "max_duration_s": 3}), "nemesis durations"),
    ("nemesis-webhooks-absent", file_case(K8S, "nemesis", {"kinds": ["webhook-error"], "window_s": 10, "max_duration_s": 5}), "webhook-error (webhook-error on random:webhook) could never apply here"),
    ("nemesis-etcd-on-mesh", lambda tmp: ["run", write(tmp, edited(edited(edited(yaml.safe_load((Path(__file__).parents[2] / "experiments" / "catalog" / "mesh-partition.yaml").read_text()), "nemesis", {"kinds": ["kill-etcd-leader"], "window_s": 10, "max_duration_s": 5}), "schedule", []), "name", "m"))], "kill-etcd-leader (kill on primaries:etcd) could never apply here"),
    # ---------------------------------------------------------------- buggify
    ("buggify-probability", file_case(K8S, "buggify", {"live_probability": 1.5}), "field `buggify`: `live_probability` is a probability between 0 and 1"),
    ("buggify-unknown-point", file_case(K8S, "buggify", {"points": ["etcd.meteor"]}), "unknown buggify point 'etcd.meteor'"),
    ("buggify-no-points", file_case(K8S, "buggify", {"points": []}), "`points` lists no point"),
    ("buggify-unknown-field", file_case(K8S, "buggify", {"probability": 0.5}), "field `buggify.probability`: unknown field"),
    ("buggify-not-a-mapping", file_case(K8S, "buggify", "yes"), "field `buggify`"),
    # issue 16: Jepsen's nemesis packages
    ("nemesis-unknown-package", file_case(ETCD, "nemesis", {"faults": ["partition", "meteor"], "window_s": 5}), "`faults`: unknown 'meteor'; known: partition, kill, pause, clock, packet, flap"),
    ("nemesis-unknown-partition-spec", file_case(ETCD, "nemesis", {"faults": ["partition"], "partition_targets": ["halves"], "window_s": 5}), "`partition_targets`: unknown 'halves'"),
    ("nemesis-nothing", file_case(ETCD, "nemesis", {"window_s": 5}), "the nemesis needs `kinds`"),
    ("nemesis-interval", file_case(ETCD, "nemesis", {"faults": ["kill"], "interval_s": 0, "window_s": 5}), "`interval_s` must be between 0.05 and 3600"),
    ("nemesis-flap-bounds", file_case(ETCD, "nemesis", {"faults": ["flap"], "flap_on_s": [3, 1], "window_s": 5}), "`flap_on_s` must be [low, high]"),
    ("nemesis-primaries-without-leader", file_case(K8S, "nemesis", {"faults": ["kill"], "roles": ["kube-apiserver"], "kill_targets": ["primaries"], "window_s": 10}), "field `nemesis.kill_targets`: primaries on kube-apiserver could never apply here"),
    ("nemesis-package-on-real-etcd", lambda tmp: ["validate", write(tmp, edited(yaml.safe_load((Path(__file__).parents[2] / "experiments" / "catalog" / "real-etcd-pause.yaml").read_text()), "nemesis", {"faults": ["partition"], "window_s": 5}))], "field `nemesis`: it schedules 'partition' faults, which cannot be applied in a 'real-etcd' run"),
    ("nemesis-partition-role-absent", file_case(ETCD, "nemesis", {"faults": ["partition"], "partition_roles": ["etcd-member"], "window_s": 5}), "field `nemesis.partition_targets`"),
    # ---------------------------------------------------------------- checkers and expected outcome
    ("checker-unknown", file_case(ETCD, "checkers", ["raft-safety", "psychic"]), "unknown checker 'psychic'"),
    ("checkers-empty", file_case(ETCD, "checkers", []), "name at least one checker"),
    ("expected-failing-unknown", file_case(ETCD, "expected", {"outcome": "fail", "failing": ["psychic"]}), "'psychic' is not one of this experiment's checkers"),
    ("expected-may-fail-with-pass", file_case(ETCD, "expected", {"outcome": "pass", "may_fail": ["raft-safety"]}), "an experiment expected to pass passes only when every checker passes"),
    ("expected-fail-without-failing", file_case(ETCD, "expected", {"outcome": "fail"}), "must name the checkers that fail"),
    ("expected-pass-with-failing", file_case(ETCD, "expected", {"outcome": "pass", "failing": ["raft-safety"]}), "it says pass but"),
    ("expected-maybe", file_case(ETCD, "expected", {"outcome": "maybe"}), "field `expected.outcome`"),
    # ---------------------------------------------------------------- gallery variants
    ("broken-unknown", file_case(ETCD, "broken", ["no-such-bug"]), "unknown broken variant 'no-such-bug'"),
    ("broken-other-system-file", file_case(ETCD, "broken", ["eviction-skips-pdb"]), "which a 'etcd' run never executes"),
    ("broken-other-system-flag", args("run", "mesh-partition", "--broken", "broken-raft"), "which a 'mesh' run never executes"),
    ("broken-real-system-flag", args("run", "real-etcd-leader-kill", "--broken", "broken-raft"), "which a 'real-etcd' run never executes"),
    ("broken-example-on-kubernetes", args("explore", "node-failure", "--seeds", "1", "--broken", "example-controller-unsynced-cache"), "which a 'kubernetes' run never executes"),
    # ---------------------------------------------------------------- system options
    ("k8s-cluster-unknown", file_case(K8S, "cluster.colour", "blue"), "field `cluster"),
    ("k8s-node-count-type", file_case(K8S, "cluster.nodeGroups[0].count", "many"), "field `cluster.nodeGroups[0].count`"),
    ("k8s-workload-unknown", file_case(K8S, "workload.colour", "blue"), "field `workload.colour`"),
    ("k8s-manifest-missing", file_case(K8S, "workload.manifests", ["missing.yaml"]), "no such file 'missing.yaml'"),
    ("k8s-replicas-huge", file_case(K8S, "workload.deployments[0].replicas", 10**6), "replicas"),
    ("etcd-members-4", file_case(ETCD, "cluster.members", 4), "members"),
    ("etcd-rate-text", file_case(ETCD, "workload.rate_per_s", "fast"), "rate_per_s"),
    ("system-unknown", file_case(ETCD, "system", "zookeeper"), "unknown system 'zookeeper'"),
    ("real-unsupported-kind", lambda tmp: ["run", write(tmp, edited(edited(edited(ETCD, "system", "real-etcd"), "schedule[0].kind", "clock-jump"), "checkers", ["steady-state"]))], "'clock-jump' cannot be applied in a 'real-etcd' run"),
    # ---------------------------------------------------------------- probes
    ("probe-unknown-resource", file_case(K8S, "probes", [probe(count={"resource": "widgets"})]), "unknown resource 'widgets'"),
    ("probe-bad-selector", file_case(K8S, "probes", [probe(count={"resource": "pods", "selector": "app in (web"})]), "`selector`"),
    ("probe-bad-field-selector", file_case(K8S, "probes", [probe(count={"resource": "pods", "field_selector": "status.colour=red"})]), "`field_selector`"),
    ("probe-duplicate-names", file_case(K8S, "probes", [probe(), probe()]), "names two probes"),
    ("probe-two-kinds", file_case(K8S, "probes", [probe(http={"service": "web"})]), "a probe is one of `http`, `object`, `count`"),
    ("probe-no-kind", file_case(K8S, "probes", [{"name": "p"}]), "a probe is one of `http`, `object`, `count`"),
    ("probe-bad-name", file_case(K8S, "probes", [probe(name="Web Probe")]), "must be a DNS label"),
    ("probe-bad-mode", file_case(K8S, "probes", [probe(mode="Always")]), "field `probes[0].mode`"),
    ("probe-mode-in-hypothesis", file_case(K8S, "steady_state", {"title": "t", "probes": [probe(mode="SOT")]}), "a steady-state probe has no `mode`"),
    ("probe-empty-hypothesis", file_case(K8S, "steady_state", {"title": "t", "probes": []}), "at least one probe"),
    ("probe-on-etcd", file_case(ETCD, "probes", [probe()]), "system 'etcd' has nothing to probe"),
    ("probe-bad-regex", file_case(K8S, "probes", [probe(tolerance={"regex": "(["})]), "does not compile"),
    ("probe-min-above-max", file_case(K8S, "probes", [probe(tolerance={"min": 5, "max": 1})]), "is above `max`"),
    ("probe-attempts-zero", file_case(K8S, "probes", [probe(attempts=0)]), "`attempts` must be between 1 and 100"),
    ("probe-interval-zero", file_case(K8S, "probes", [probe(interval_s=0)]), "`interval_s`"),
    ("probe-bad-field-path", file_case(K8S, "probes", [{"name": "p", "object": {"resource": "deployments", "name": "web", "field": "status..ready"}}]), "is not a dotted path"),
    ("probe-field-and-condition", file_case(K8S, "probes", [{"name": "p", "object": {"resource": "deployments", "name": "web", "field": "a", "condition": "Available"}}]), "give `field` or `condition`, not both"),
    ("probe-service-slashes", file_case(K8S, "probes", [{"name": "p", "http": {"service": "a/b/c"}}]), "NAME or NAMESPACE/NAME"),
    ("probe-checker-typo", file_case(K8S, "checkers", ["steady-state", "probe:nope"]), "unknown checker 'probe:nope'"),
    # ---------------------------------------------------------------- manifests (--manifests DIR)
    ("manifest-dev-zero", file_case(K8S, "workload.manifests", ["/dev/zero"]), "larger than 4 MiB, the most chaoskube reads as a manifest file"),
    ("manifest-dev-zero-dry-run", file_case(K8S, "workload.manifests", ["/dev/zero"], command="dry"), "larger than 4 MiB"),
    ("manifest-too-large", manifests_case("10-big.yaml", size=MANIFEST_MAX_BYTES + 1), "larger than 4 MiB"),
    ("manifest-not-utf8", manifests_case("10-bad.yaml", b"kind: \xff\n"), "not UTF-8 text"),
    ("manifest-duplicate-key", manifests_case("10-dup.yaml", DEPLOYMENT.replace("replicas: 1", "replicas: 1\n  replicas: 2").encode()), "duplicate key"),
    ("manifest-unknown-kind", manifests_case("10-kind.yaml", b"apiVersion: v1\nkind: Frobnicator\nmetadata: {name: x}\n"), "kind Frobnicator is not supported"),
    ("manifest-deep", manifests_case("10-deep.yaml", b"a: " + b"[" * 3000 + b"]" * 3000 + b"\n"), "nested more than 100 deep"),
    ("manifest-binary", manifests_case("10-bin.yaml", bytes(range(1, 256)) * 4), "10-bin.yaml"),
    ("manifests-empty-dir", lambda tmp: ["run", "node-failure", "--manifests", _dir(tmp, "empty")], "no .yaml, .yml or .json file in it"),
    ("manifests-a-file", lambda tmp: ["run", "node-failure", "--manifests", write(tmp, "x: 1\n", "file.yaml")], "not a directory"),
    ("manifests-for-etcd", lambda tmp: ["run", "etcd-leader-kill", "--manifests", _manifests_dir(tmp)], "which takes no manifests"),
    # ---------------------------------------------------------------- histories (check-history)
    ("history-dev-zero", history_case(link="/dev/zero"), "larger than 64 MiB, the most chaoskube reads as a history"),
    ("history-too-large", history_case(size=HISTORY_MAX_BYTES + 1), "larger than 64 MiB"),
    ("history-not-utf8", history_case(b"\xff\xfe garbage\n"), "not UTF-8 text"),
    ("history-malformed", history_case(b"this is not a history\n"), "history.log"),
    ("history-missing", args("check-history", "/nonexistent/h.log", "--format", "jepsen-etcd"), "cannot read history"),
    ("history-directory", lambda tmp: ["check-history", tmp, "--format", "porcupine-kv"], "cannot read history"),
    ("history-format", args("check-history", "/dev/null", "--format", "xml"), "Invalid value for '--format'"),
    ("history-time-limit-nan", history_case(b"", extra=("--time-limit", "nan")), "is not a finite number of seconds > 0"),
    ("history-time-limit-inf", history_case(b"", extra=("--time-limit", "inf")), "is not a finite number of seconds > 0"),
    ("history-time-limit-zero", history_case(b"", extra=("--time-limit", "0")), "is not a finite number of seconds > 0"),
    ("history-time-limit-negative", history_case(b"", extra=("--time-limit", "-1")), "is not a finite number of seconds > 0"),
    ("history-time-limit-word", history_case(b"", extra=("--time-limit", "soon")), "is not a number of seconds"),
    # ---------------------------------------------------------------- flags
    ("out-empty-run", args("run", "mesh-partition", "--out", ""), "an empty path"),
    ("out-empty-explore", args("explore", "mesh-partition", "--seeds", "1", "--out", ""), "an empty path"),
    ("out-blank", args("run", "mesh-partition", "--out", "   "), "an empty path"),
    ("out-a-file", lambda tmp: ["run", "mesh-partition", "--out", write(tmp, "x", "a-file")], "is a file"),
    ("out-under-a-file", lambda tmp: ["run", "mesh-partition", "--out", write(tmp, "x", "a-file") / "sub"], "cannot write there"),
    ("jobs-zero", args("explore", "mesh-partition", "--seeds", "1", "--jobs", "0"), "--jobs"),
    ("jobs-many", args("explore", "mesh-partition", "--seeds", "1", "--jobs", "1000"), "--jobs"),
    ("keep-bogus", args("explore", "mesh-partition", "--seeds", "1", "--keep", "some"), "Invalid value for '--keep'"),
    ("seeds-missing", args("explore", "mesh-partition"), "Missing option '--seeds'"),
    ("explore-nothing", args("explore", "--seeds", "1"), "name experiments or give --all"),
    ("explore-both", args("explore", "mesh-partition", "--all", "--seeds", "1"), "name experiments or give --all"),
    ("explore-twice", args("explore", "mesh-partition", "experiments/catalog/mesh-partition.yaml", "--seeds", "1"), "the same name"),
    ("explore-real", args("explore", "real-etcd-leader-kill", "--seeds", "1"), "runs real processes in real time"),
    ("unknown-option", args("run", "mesh-partition", "--speed", "9"), "No such option '--speed'"),
    ("unknown-command", args("runn", "mesh-partition"), "No such command 'runn'"),
    ("extra-argument", args("run", "mesh-partition", "extra"), "Got unexpected extra argument"),
    ("unknown-experiment", args("run", "mesh-partitio"), "unknown experiment 'mesh-partitio'; did you mean mesh-partition?"),
    ("describe-unknown", args("describe", "nope"), "unknown experiment 'nope'"),
    # ---------------------------------------------------------------- replay
    ("replay-not-dir", args("replay", "/nonexistent/run"), "not a directory"),
    ("replay-no-result", lambda tmp: ["replay", tmp], "no result.json here"),
    ("replay-bad-json", result_case(b"{not json"), "cannot read it as JSON"),
    ("replay-not-object", result_case(b"[1, 2]"), "not a chaoskube result"),
    ("replay-no-fingerprint", result_case(result_payload(journal_sha256="")), "no journal_sha256"),
    ("replay-real-run", result_case(result_payload(mode="real-time")), "not reproducible to the byte"),
    ("replay-dev-zero", lambda tmp: ["replay", _result_link(tmp)], "larger than 64 MiB"),
    # ---------------------------------------------------------------- report
    ("report-not-dir", args("report", "/nonexistent/run"), "not a directory"),
    ("report-no-runs", lambda tmp: ["report", tmp], "no result.json here or in its subdirectories"),
    ("report-bad-result", lambda tmp: ["report", result_case(b"{}")(tmp)[1], "--out", tmp / "o"], "not a chaoskube result"),
    ("report-twice", lambda tmp: ["report", *[_good_run(tmp)] * 2, "--out", tmp / "o"], "given twice"),
    # ---------------------------------------------------------------- validate, schema, mark-fixed
    ("validate-missing", args("validate", "/nonexistent/x.yaml"), "1 problem(s) in 1 of 1 file(s)"),
    ("validate-one-bad-of-two", lambda tmp: ["validate", "mesh-partition", write(tmp, edited(ETCD, "checkers", []))], "1 problem(s) in 1 of 2 file(s)"),
    ("validate-nothing", args("validate"), "Missing argument"),
    ("schema-out-unwritable", args("schema", "--out", "/nonexistent/dir/schema.json"), "cannot write there"),
    ("mark-fixed-not-hypothesis", args("mark-fixed", "experiments/catalog/etcd-lost-fsync.yaml"), "mark-fixed is for saved Hypothesis examples"),
    ("mark-fixed-missing", args("mark-fixed", "/nonexistent/x.yaml"), "cannot read"),
    # ---------------------------------------------------------------- toxiproxy
    ("toxiproxy-port", args("toxiproxy", "--listen", "127.0.0.1:99999"), "invalid port"),
    ("toxiproxy-no-port", args("toxiproxy", "--listen", "localhost"), "missing port"),
    ("toxiproxy-host", args("toxiproxy", "--listen", "no-such-host.invalid:8474"), "cannot resolve the host"),
    ("toxiproxy-busy", busy_port(), "cannot listen there (Address already in use)"),
    ("toxiproxy-seed", args("toxiproxy", "--seed", "-1"), "--seed"),
]


def _bytes(tmp: Path, data: bytes) -> Path:
    path = tmp / "bad.yaml"
    path.write_bytes(data)
    return path


def _dir(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.mkdir()
    return path


def _manifests_dir(tmp: Path) -> Path:
    directory = _dir(tmp, "good")
    (directory / "shop.yaml").write_text(DEPLOYMENT)
    return directory


def _result_link(tmp: Path) -> Path:
    run = _dir(tmp, "run")
    (run / "result.json").symlink_to("/dev/zero")
    return run


def _good_run(tmp: Path) -> Path:
    run = tmp / "run"
    if not run.exists():
        run.mkdir()
        (run / "result.json").write_bytes(orjson.dumps(result_payload() | {"verdicts": {}, "as_expected": True}))
    return run


def test_the_table_has_at_least_150_rows_each_named_once():
    names = [name for name, _, _ in CASES]
    assert len(names) >= 150, len(names)
    assert len(set(names)) == len(names), [name for name in names if names.count(name) > 1]


@pytest.mark.parametrize(("name", "build", "fragment"), CASES, ids=[name for name, _, _ in CASES])
def test_bad_input_is_one_line_exit_2_and_starts_nothing(tmp_path, in_process, monkeypatch, name, build, fragment):
    monkeypatch.chdir(Path(__file__).parents[2])  # catalogue paths in the rows are relative to the repository
    argv = build(tmp_path)
    runs_before = set(os.listdir("runs")) if os.path.isdir("runs") else set()
    try:
        result = in_process(*argv)
    finally:
        for sock in BUSY:
            sock.close()
        BUSY.clear()
    assert result.returncode == 2, (argv, result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, (argv, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    assert fragment in lines[0] or fragment in result.stdout, (argv, lines[0], result.stdout[-1000:])
    runs_after = set(os.listdir("runs")) if os.path.isdir("runs") else set()
    assert runs_after == runs_before, f"{name} started a run: {sorted(runs_after - runs_before)}"


def test_an_experiment_name_never_escapes_runs_even_when_the_check_is_bypassed(tmp_path):
    """Defence in depth: the default run directory is runs/NAME-seedN, and NAME is checked."""
    from chaoskube.experiments.registry import NAME_PATTERN

    for name in ("../x", "a/../../b", "/abs", "..", ".", ""):
        assert not NAME_PATTERN.match(name), name


def test_a_user_sees_bad_input_as_one_line_in_a_separate_process(tmp_path):
    """A few rows as a user runs them (the real entry point, a fresh interpreter)."""
    from tests.cli.test_cli import ROOT

    experiment = write(tmp_path, edited(K8S, "schedule[0].target", "zone:zone-x"))
    for argv, fragment in (
        (["run", str(experiment), "--dry-run"], "no zone 'zone-x'"),
        (["run", "mesh-partition", "--seed", str(BIG)], "--seed"),
        (["check-history", "/dev/zero", "--format", "jepsen-etcd"], "larger than 64 MiB"),
        (["run", "mesh-partition", "--out", ""], "an empty path"),
    ):
        completed = subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert completed.returncode == 2 and len(completed.stderr.strip().splitlines()) == 1 and fragment in completed.stderr, (argv, completed.stderr)

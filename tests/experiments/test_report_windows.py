"""Issue 32: a Service's outage windows in report.md and report.html -- the first five, the
longest always (the row names its length), and "… and N more" for the rest."""

from __future__ import annotations

import re

from chaoskube.experiments.answers import Answers, ServiceAnswer, WorkloadAnswer, markdown_lines, shown_windows
from chaoskube.experiments.report_html import _answers


def many_windows():
    # 23 one-second outages, the 18th (from t=57.9) lasting 4 s: the longest, not among the first five.
    windows = [(10.0 + 3 * index, 11.0 + 3 * index, 2) for index in range(23)]
    windows[17] = (57.9, 61.9, 9)
    return windows


def test_shown_windows_keeps_the_longest_and_counts_the_rest():
    windows = many_windows()
    shown, more = shown_windows(windows)
    assert shown == [*windows[:4], windows[17]] and more == 18
    assert shown_windows(windows[:5]) == (windows[:5], 0)
    # The longest among the first five: the first five, nothing added.
    assert shown_windows([(0.0, 9.0, 1), *windows]) == ([(0.0, 9.0, 1), *windows[:4]], 19)
    # A window still open at the end (None) counts as zero long, as longest_s measures it.
    open_ended = [*windows[:6], (100.0, None, 3)]
    assert shown_windows(open_ended) == (open_ended[:5], 2)


def test_report_md_and_html_name_the_longest_outage_and_how_many_more():
    service = ServiceAnswer("shop/web", requests=1000, ok=900, windows=many_windows())
    assert service.longest_s == 4.0
    answers = Answers(services=[service], end_s=120.0)
    row = next(line for line in markdown_lines(answers) if line.startswith("| shop/web "))
    assert "| 4.0 s |" in row and "57.9 s – 61.9 s (9 failed)" in row and row.endswith("; … and 18 more |")
    assert row.count(" failed)") == 5
    html = _answers(None, [], answers)
    cell = re.search(r'<tr data-service="shop/web">(.*?)</tr>', html).group(1)
    assert "57.9 s – 61.9 s (9 failed)" in cell and "… and 18 more" in cell and cell.count(" failed)") == 5


def test_a_workloads_windows_are_bounded_the_same_way():
    workload = WorkloadAnswer("Deployment", "shop/web", desired=3, converged_at=5.0, windows=[(float(i), float(i) + 0.5, 1) for i in range(8)])
    row = next(line for line in markdown_lines(Answers(workloads=[workload], end_s=60.0)) if line.startswith("| Deployment shop/web "))
    assert row.count("(lowest 1)") == 5 and "… and 3 more" in row


def _apply(t: float, revision: int, *entries: tuple[str, str, dict | None]) -> dict:
    import json

    return {"type": "raft-apply", "t": t, "revision": revision, "member": "etcd-1", "events": [[op, key, json.dumps(obj) if obj is not None else None] for op, key, obj in entries]}


def test_a_workload_marked_for_deletion_is_no_longer_wanted_from_that_moment():
    """A Deployment deleted in the foreground loses its pods on purpose: its window below
    desired ends when it is marked for deletion, and the report says so instead of "none of its
    pods was created" (swarm seed 101: ``default/batch`` read "83.6 s below desired")."""
    from chaoskube.experiments.answers import answer

    deployment = {"kind": "Deployment", "metadata": {"name": "batch", "namespace": "default", "uid": "d1"}, "spec": {"replicas": 1}}
    replica_set = {"kind": "ReplicaSet", "metadata": {"name": "batch-1", "namespace": "default", "uid": "r1", "ownerReferences": [{"kind": "Deployment", "name": "batch", "uid": "d1", "controller": True}]}, "spec": {"replicas": 1}}
    pod = {"kind": "Pod", "metadata": {"name": "batch-1-a", "namespace": "default", "uid": "p1", "ownerReferences": [{"kind": "ReplicaSet", "name": "batch-1", "uid": "r1", "controller": True}]}, "spec": {"nodeName": "node-1"}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    unready = {**pod, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}
    marked = {**deployment, "metadata": {**deployment["metadata"], "deletionTimestamp": "2026-01-01T00:00:30Z", "finalizers": ["foregroundDeletion"]}}
    events = [
        _apply(1.0, 2, ("PUT", "/registry/deployments/default/batch", deployment), ("PUT", "/registry/replicasets/default/batch-1", replica_set)),
        _apply(2.0, 3, ("PUT", "/registry/pods/default/batch-1-a", pod)),
        _apply(10.0, 4, ("PUT", "/registry/pods/default/batch-1-a", unready)),  # below desired from 10 s
        _apply(30.0, 5, ("PUT", "/registry/deployments/default/batch", marked)),  # marked: the window ends
        _apply(31.0, 6, ("DELETE", "/registry/pods/default/batch-1-a", None)),
        _apply(40.0, 7, ("DELETE", "/registry/replicasets/default/batch-1", None), ("DELETE", "/registry/deployments/default/batch", None)),
    ]
    answers = answer(events, end_s=100.0)
    (workload,) = answers.workloads
    assert workload.deleted_at == 30.0 and workload.windows == [(10.0, 30.0, 0)] and workload.below_s == 20.0
    row = next(line for line in markdown_lines(answers) if line.startswith("| Deployment default/batch "))
    assert row.endswith("| 20.0 s | 0/1 | 10.0 s – 30.0 s (lowest 0); deleted at 30.0 s |"), row
    assert "none of its pods" not in row and "end of run" not in row
    html = _answers(None, [], answers)
    assert "deleted at 30.0 s" in html and "at the end" not in html


def test_a_workload_made_again_under_its_name_is_wanted_again():
    """The workload generator reuses its slots' names: a Deployment deleted, then created
    again as default/batch, is judged again once it has reached its desired replicas (not
    left 'deleted at' for the rest of the run)."""
    from chaoskube.experiments.answers import answer

    deployment = {"kind": "Deployment", "metadata": {"name": "batch", "namespace": "default", "uid": "d1"}, "spec": {"replicas": 1}}
    again = {**deployment, "metadata": {**deployment["metadata"], "uid": "d2"}}
    replica_set = {"kind": "ReplicaSet", "metadata": {"name": "batch-1", "namespace": "default", "uid": "r2", "ownerReferences": [{"kind": "Deployment", "name": "batch", "uid": "d2", "controller": True}]}, "spec": {"replicas": 1}}
    pod = {"kind": "Pod", "metadata": {"name": "batch-1-a", "namespace": "default", "uid": "p2", "ownerReferences": [{"kind": "ReplicaSet", "name": "batch-1", "uid": "r2", "controller": True}]}, "spec": {"nodeName": "node-1"}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    unready = {**pod, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}
    events = [
        _apply(1.0, 2, ("PUT", "/registry/deployments/default/batch", deployment)),
        _apply(10.0, 3, ("DELETE", "/registry/deployments/default/batch", None)),  # deleted (it never converged)
        _apply(20.0, 4, ("PUT", "/registry/deployments/default/batch", again), ("PUT", "/registry/replicasets/default/batch-1", replica_set)),
        _apply(21.0, 5, ("PUT", "/registry/pods/default/batch-1-a", pod)),  # converged
        _apply(30.0, 6, ("PUT", "/registry/pods/default/batch-1-a", unready)),  # below desired from 30 s
        _apply(35.0, 7, ("PUT", "/registry/pods/default/batch-1-a", pod)),
    ]
    (workload,) = answer(events, end_s=100.0).workloads
    assert workload.deleted_at is None and workload.converged_at == 21.0
    assert workload.windows == [(30.0, 35.0, 0)] and workload.below_s == 5.0

"""test-operator's perturbations of what the operator sees (Sieve, OSDI 2022, §4.2-4.3), each
shown to really happen in one live session of a gallery operator, with no learning run:

- stale state: restarted against the second API server, whose watch cache was frozen just
  before the user's change, the operator's cached reads (resourceVersion=0) are answered at
  the older revision -- and it converges to the old spec;
- unobserved state: the DELETED event of the ConfigMap the operator deleted is withheld, its
  watches end, resuming one is answered 410 Expired, it lists again -- and never sees that
  event, so the claim it deletes on that event stays.

Slow: one live session each (about 25 s)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from chaoskube.experiments.operator_testing.plans import parse_plan_id
from chaoskube.experiments.operator_testing.run import load_target
from chaoskube.experiments.operator_testing.session import SessionOptions, run_session

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "operators" / "gallery"
WIDGETS = "widgets.gallery.chaoskube.dev"

pytestmark = pytest.mark.slow


def _session(tmp_path: Path, operator: str, plan_id: str) -> tuple[dict, list[dict]]:
    pytest.importorskip("kopf", reason="kopf is in the test extra (pip install -e '.[test]')")
    target = load_target(f"{sys.executable} -m kopf run --standalone -A {GALLERY / operator}", [GALLERY / "widgets-crd.yaml"], None)
    record = run_session(target, tmp_path / "session", parse_plan_id(plan_id), SessionOptions(quiet_s=1.5))
    events = [orjson.loads(line) for line in (tmp_path / "session" / "journal.jsonl").read_bytes().splitlines() if line]
    assert not record.error, record.error
    return record.to_json(), events


def test_stale_state_restarts_the_operator_against_a_lagging_replica(tmp_path):
    record, events = _session(tmp_path, "stale_read_after_restart.py", f"stale-state@user-patch:{WIDGETS}#1")
    perturbation = record["perturbation"]
    assert perturbation["server"] == "kube-apiserver-2" and perturbation["applied"] < perturbation["restarted"] < perturbation["healed"]
    stale = perturbation["stale_revision"]
    (change,) = [e for e in events if e["type"] == "api-op" and e.get("client") == "outside" and e.get("verb") == "patch" and e.get("phase") == "ok"][:1]
    assert int(change["resource_version"]) > stale  # the user's change is past the frozen cache
    during = [e for e in events if e["type"] == "api-read" and e.get("client") == "operator" and perturbation["restarted"] <= e["t"] < perturbation["healed"]]
    cached = [e for e in during if e.get("request_rv") == "0" and e.get("resource") == WIDGETS]
    assert cached and all(e["server"] == "kube-apiserver-2" and int(e["resource_version"]) <= stale for e in cached), during
    # the stale spec (1 replica) is what it converged to, and it called the change handled
    (after,) = [step for step in record["steps"] if step["step"] == "update Widget default/widget-1 spec.replicas=2"][-1:]
    children = {key for e in events if e["type"] == "raft-apply" and e["t"] <= after["t_end"] for _, key, *_ in e.get("events") or () if "/configmaps/default/widget-1-cm-" in str(key)}
    assert children and not any(str(key).endswith("widget-1-cm-1") for key in children)
    marks = [(e["server"], e["event"]) for e in events if e["type"] == "watch-cache" and e.get("event") in ("stalled", "resumed")]
    assert marks == [("kube-apiserver-2", "stalled"), ("kube-apiserver-2", "resumed")]


def test_unobserved_state_withholds_the_events_and_the_operator_relists(tmp_path):
    record, events = _session(tmp_path, "cleanup_on_observed_delete.py", "unobserved-state@delete:configmaps#1")
    perturbation = record["perturbation"]
    assert perturbation["withholding"] < perturbation["applied"] == perturbation["healed"]
    withheld = [tuple(summary) for e in events if e["type"] == "watch-withheld" and e["client"] == "operator" for summary in e["events"]]
    assert ("DELETED", "default/widget-1-cm-1") in {summary[:2] for summary in withheld}
    received = {tuple(summary[:2]) for e in events if e["type"] == "watch-recv" and str(e.get("watch", "")).startswith("operator/") for summary in e["events"]}
    assert ("DELETED", "default/widget-1-cm-1") not in received  # it never reached the operator
    assert ("ERROR", "") in received  # resuming a watch: 410 Expired; then it listed again
    relists = [e for e in events if e["type"] == "api-read" and e.get("client") == "operator" and e.get("verb") == "list" and e["t"] > perturbation["applied"]]
    assert relists
    assert [step.get("withheld", False) for step in record["steps"] if "t_end" in step] == [False, False, False, True, False, False]
    # the claim it deletes only on that event stays
    claims = {}
    for e in events:
        for change in e.get("events") or () if e["type"] == "raft-apply" else ():
            if "/persistentvolumeclaims/default/widget-1-data-1" in str(change[1]):
                claims[e["t"]] = change[0]
    image = next(step for step in record["steps"] if "t_end" in step and "image" in step["step"])
    assert [kind for t, kind in sorted(claims.items()) if t <= image["t_end"]][-1] != "DELETE"

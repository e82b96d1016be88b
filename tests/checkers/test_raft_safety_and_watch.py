"""The Raft-safety and watch checkers on small hand-made journals."""

from chaoskube.checkers.raft_safety import check_raft_safety, durability, election_safety, leader_completeness, state_machine_safety
from chaoskube.checkers.watch import check_watches


def role(t, member, term, last_index=None, role="leader"):
    return {"type": "raft-role", "t": t, "member": member, "role": role, "term": term, "last_index": last_index}


def apply(t, member, index, term, id, events=(), revision=None):
    return {"type": "raft-apply", "t": t, "member": member, "index": index, "term": term, "id": id, "events": [list(e) for e in events], "revision": revision}


def ack(t, request, f="write", output=None):
    return {"type": "client-op", "t": t, "phase": "ok", "f": f, "request": request, "output": output}


HEALTHY = [
    role(1, "a", 1, last_index=1),
    apply(1.1, "a", 1, 1, None),
    apply(1.2, "a", 2, 1, "w1"),
    apply(1.2, "b", 1, 1, None),
    apply(1.3, "b", 2, 1, "w1"),
    ack(1.3, "w1"),
    role(5, "b", 2, last_index=3),
    apply(5.1, "b", 3, 2, None),
]


def test_healthy_history_passes_every_property():
    assert check_raft_safety(HEALTHY).valid is True


def test_two_leaders_in_one_term():
    verdict = election_safety(HEALTHY + [role(6, "c", 2, last_index=3)])
    assert verdict.valid is False and "two leaders in term 2: b and c" in verdict.reason
    assert len(verdict.evidence) == 2


def test_different_entries_at_one_index():
    verdict = state_machine_safety(HEALTHY + [apply(7, "c", 2, 2, "w9")])
    assert verdict.valid is False and "index 2" in verdict.reason


def test_leader_missing_an_applied_entry():
    verdict = leader_completeness(HEALTHY + [role(8, "c", 3, last_index=2)])  # holds 1 entry, 2 applied
    assert verdict.valid is False and "holding 1 entries" in verdict.reason


def test_a_leader_of_an_old_term_need_not_hold_entries_committed_in_a_later_one():
    """etcd-jepsen-flapping-primaries with BUGGIFY, seed 57: c stood for term 3 and was
    paused before counting its votes; meanwhile d won term 4 and committed index 4. Resumed,
    c counted the votes and led term 3 holding 3 entries -- as Raft allows (index 4 was
    committed in term 4) -- and stepped down at d's first message. An entry committed while
    every leader's term was below 3 must still be held."""
    history = HEALTHY + [role(6, "d", 4, last_index=4), apply(6.1, "d", 4, 4, None), role(8, "c", 3, last_index=4)]
    assert leader_completeness(history).valid is True
    missing = HEALTHY + [role(6, "d", 4, last_index=4), apply(6.1, "d", 4, 4, None), role(8, "c", 3, last_index=3)]
    verdict = leader_completeness(missing)  # c holds 2 entries; index 3 was committed in term 2
    assert verdict.valid is False and "index 3 was already applied (committed in a term before 3)" in verdict.reason


def test_acknowledged_write_replaced_later_is_lost():
    verdict = durability(HEALTHY + [apply(9, "c", 2, 3, "w7")])
    assert verdict.valid is False and "acknowledged write w1 at index 2 was lost" in verdict.reason


def test_acknowledged_write_beyond_the_final_log_is_lost():
    final = {"type": "etcd-final", "t": 10, "member": "a", "running": True, "applied_index": 1}
    verdict = durability(HEALTHY + [final])
    assert verdict.valid is False and "no member had applied past 1" in verdict.reason


def test_composed_verdict_leads_with_durability_and_names_the_rest():
    verdict = check_raft_safety(HEALTHY + [apply(9, "c", 2, 3, "w7")])
    assert verdict.reason.startswith("durability: ")
    assert "also violated: state machine safety" in verdict.reason


def test_nothing_to_judge_is_unknown_never_true():
    assert check_raft_safety([]).valid is None


STORE = [
    apply(1, "a", 2, 1, "w1", events=[("PUT", "key/1", "10", 2)], revision=2),
    apply(1, "a", 3, 1, "w2", events=[("PUT", "key/2", "20", 3)], revision=3),
    apply(1, "a", 4, 1, "w3", events=[("DELETE", "key/1", "", 4)], revision=4),
    apply(1, "a", 5, 1, "w4", events=[("PUT", "other", "x", 5)], revision=5),
]


def watch(revision, key, event, value):
    return {"type": "watch-event", "t": 2, "watcher": "w", "revision": revision, "key": key, "event": event, "value": value}


START = {"type": "watch-start", "t": 1.5, "watcher": "w", "start_revision": 1, "ok": True}


def test_complete_ordered_watch_passes():
    events = STORE + [START, watch(2, "key/1", "PUT", "10"), watch(3, "key/2", "PUT", "20"), watch(4, "key/1", "DELETE", None)]
    assert check_watches(events, {"w": "key/"}).valid is True


def test_gap_is_caught():
    events = STORE + [START, watch(2, "key/1", "PUT", "10"), watch(4, "key/1", "DELETE", None)]
    verdict = check_watches(events, {"w": "key/"})
    assert verdict.valid is False and "missed PUT key/2 at revision 3" in verdict.reason


def test_out_of_order_and_duplicates_are_caught():
    events = STORE + [START, watch(3, "key/2", "PUT", "20"), watch(2, "key/1", "PUT", "10")]
    assert "out of order" in check_watches(events, {"w": "key/"}).reason
    events = STORE + [START, watch(2, "key/1", "PUT", "10"), watch(2, "key/1", "PUT", "10")]
    assert check_watches(events, {"w": "key/"}).valid is False


def test_event_the_store_never_produced_is_caught():
    events = STORE + [START, watch(2, "key/1", "PUT", "99")]
    assert "never produced" in check_watches(events, {"w": "key/"}).reason


def test_a_watcher_that_received_nothing_is_caught():
    verdict = check_watches(STORE + [START], {"w": "key/"})
    assert verdict.valid is False and "missed PUT key/1 at revision 2" in verdict.reason


def test_a_watcher_that_stopped_early_is_caught():
    events = STORE + [START, watch(2, "key/1", "PUT", "10")]
    assert "missed PUT key/2 at revision 3" in check_watches(events, {"w": "key/"}).reason


def test_a_declared_watcher_that_never_started_is_caught():
    assert "never started" in check_watches(STORE, {"w": "key/"}).reason

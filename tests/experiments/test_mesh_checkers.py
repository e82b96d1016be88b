"""The mesh checkers catch a network that breaks its guarantees (doctored journals)."""

from chaoskube.experiments.systems.mesh import check_network_integrity, check_probes_respect_partitions


def journal(*events):
    return [dict(event, t=event.get("t", 1.0)) for event in events]


START = [{"type": "process", "event": "start", "process": name} for name in ("a", "b")]


def test_clean_journal_passes():
    events = journal(*START, {"type": "send", "id": 1, "src": "a", "dst": "b"}, {"type": "deliver", "id": 1, "src": "a", "dst": "b"})
    assert check_network_integrity(events).valid is True


def test_delivery_across_partition_is_caught():
    events = journal(
        *START,
        {"type": "send", "id": 1, "src": "a", "dst": "b"},
        {"type": "partition", "grudge": {"b": ["a"]}},
        {"type": "deliver", "id": 1, "src": "a", "dst": "b", "t": 2.0},
    )
    verdict = check_network_integrity(events)
    assert verdict.valid is False and "across a partition" in verdict.reason and len(verdict.evidence) == 1


def test_delivery_to_paused_process_is_caught():
    events = journal(
        *START,
        {"type": "process", "event": "pause", "process": "b"},
        {"type": "send", "id": 1, "src": "a", "dst": "b"},
        {"type": "deliver", "id": 1, "src": "a", "dst": "b"},
    )
    assert "paused" in check_network_integrity(events).reason


def test_duplicate_and_phantom_deliveries_are_caught():
    sent = {"type": "send", "id": 1, "src": "a", "dst": "b"}
    deliver = {"type": "deliver", "id": 1, "src": "a", "dst": "b"}
    assert "twice" in check_network_integrity(journal(*START, sent, deliver, deliver)).reason
    assert "never sent" in check_network_integrity(journal(*START, deliver)).reason


def test_no_network_events_is_unknown_not_true():
    assert check_network_integrity(journal(*START)).valid is None


def test_probe_succeeding_across_a_whole_partition_is_caught():
    events = journal(
        {"type": "partition", "grudge": {"b": ["a"]}, "t": 1.0},
        {"type": "probe", "src": "a", "dst": "b", "status": "ok", "call_t": 1.5, "t": 1.6},
    )
    assert check_probes_respect_partitions(events).valid is False


def test_probe_overlapping_a_heal_may_succeed():
    events = journal(
        {"type": "partition", "grudge": {"b": ["a"]}, "t": 1.0},
        {"type": "partition", "grudge": {}, "t": 1.55},
        {"type": "probe", "src": "a", "dst": "b", "status": "ok", "call_t": 1.5, "t": 1.6},
    )
    assert check_probes_respect_partitions(events).valid is True

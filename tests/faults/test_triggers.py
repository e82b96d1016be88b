"""Event-triggered faults (faults/triggers.py): the pure matching, validation, a live
scenario (the fault fires at the matched event plus its delay, at most ``times`` times,
only while armed), the experiment-file errors, and determinism."""

from __future__ import annotations

import json

import msgspec
import pytest
import trio

from chaoskube.faults import Context, FaultInjector, ProcessInfo, ScheduledFault
from chaoskube.faults.triggers import EVENTS, TriggerError, When, event_process, matches, trigger_problems, validate
from chaoskube.sim import World

LEADERS = {"db": "n1"}
ROLES = {"n1": "db", "n2": "db", "n3": "db", "c1": "client"}


def resolver(selector: str, argument: str) -> list[str]:
    """A stand-in for the injector's: n1 leads role db."""
    if selector == "leader":
        return [LEADERS[argument]] if argument in LEADERS else []
    if selector == "follower":
        return [name for name, role in ROLES.items() if role == argument and name != LEADERS.get(argument)]
    if selector == "role":
        return [name for name, role in ROLES.items() if role == argument]
    if selector == "name":
        return [argument] if argument in ROLES else []
    return []


# -- matching: a table ------------------------------------------------------------------
SEND_APP = {"type": "send", "t": 1.0, "id": 7, "src": "n1", "dst": "n2", "port": "raft", "kind": "APP"}
ROLE = {"type": "raft-role", "t": 2.0, "member": "n2", "role": "leader", "term": 3, "lead": "n2", "last_index": 5, "last_term": 2}

MATCH_TABLE = [
    # (when, event, matches?)
    (When(type="send"), SEND_APP, True),
    (When(type="deliver"), SEND_APP, False),  # another type
    (When(type="send", fields={"kind": "APP"}), SEND_APP, True),
    (When(type="send", fields={"kind": "HEARTBEAT"}), SEND_APP, False),
    (When(type="send", process="leader:db"), SEND_APP, True),  # send's process is src
    (When(type="send", process="follower:db"), SEND_APP, False),
    (When(type="send", fields={"dst": "follower:db"}), SEND_APP, True),
    (When(type="send", fields={"dst": "leader:db"}), SEND_APP, False),
    (When(type="send", process="n1", fields={"kind": "APP", "dst": "n2"}), SEND_APP, True),
    (When(type="send", process="name:n1"), SEND_APP, True),
    (When(type="send", fields={"dst": "role:client"}), SEND_APP, False),
    (When(type="send", fields={"id": 7}), SEND_APP, True),
    (When(type="send", fields={"id": 8}), SEND_APP, False),
    (When(type="raft-role", fields={"role": "leader"}), ROLE, True),
    (When(type="raft-role", process="n2", fields={"term": 3}), ROLE, True),
    (When(type="raft-role", fields={"term": 3.0}), ROLE, True),  # 3 == 3.0, as YAML may say
    (When(type="raft-role", fields={"term": True}), ROLE, False),  # a bool is not the number 1
    (When(type="raft-role", fields={"role": "leader", "lead": "n1"}), ROLE, False),  # every field must match
    (When(type="etcd-snapshot", fields={"event": "take"}), {"type": "etcd-snapshot", "member": "n1"}, False),  # a missing field never matches
]


@pytest.mark.parametrize(("when", "event", "expected"), MATCH_TABLE)
def test_matching_table(when, event, expected):
    validate(when)
    assert matches(when, event, resolver) is expected


def test_a_selector_is_resolved_only_for_an_event_that_matches_everything_else():
    calls = []

    def counting(selector, argument):
        calls.append((selector, argument))
        return resolver(selector, argument)

    when = When(type="send", process="leader:db", fields={"kind": "HEARTBEAT"})
    assert not matches(when, SEND_APP, counting)
    assert calls == []
    assert matches(When(type="send", process="leader:db", fields={"kind": "APP"}), SEND_APP, counting)
    assert calls == [("leader", "db")]


def test_event_targets_name_the_events_process_or_a_field():
    assert event_process("send", "event:process", SEND_APP) == "n1"
    assert event_process("send", "event:dst", SEND_APP) == "n2"
    assert event_process("raft-role", "event:process", ROLE) == "n2"
    assert event_process("raft-role", "event:lead", {**ROLE, "lead": None}) is None


def test_describe_says_what_dry_run_prints():
    assert When(type="send", process="leader:etcd", fields={"kind": "APP"}).describe() == "when send (process leader:etcd, kind=APP), once"
    assert When(type="raft-role", delay_ms=1, times=3).describe() == "when raft-role, +1 ms, up to 3 times"
    assert When(type="raft-role", delay_s=0.5).delay == 0.5
    assert When(type="raft-role", delay_ms=1).delay == 0.001


# -- validation -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("when", "field", "words"),
    [
        (When(type="raft-rol"), "type", "unknown event type 'raft-rol'"),
        (When(type="trigger"), "type", "unknown event type"),  # a trigger never matches its own journal
        (When(type="send", fields={"knd": "APP"}), "fields.knd", "has no field 'knd'"),
        (When(type="partition", process="n1"), "process", "names no process"),
        (When(type="send", process="leader:"), "process", "needs an argument"),
        (When(type="send", delay_s=-1), "delay_s", ">= 0"),
        (When(type="send", delay_ms=float("nan")), "delay_ms", ">= 0"),
        (When(type="send", delay_s=1, delay_ms=1), "delay_ms", "not both"),
        (When(type="send", times=0), "times", "between 1 and"),
        (When(type="send", fields={"id": float("inf")}), "fields.id", "finite"),
    ],
)
def test_bad_triggers_are_refused_naming_the_field(when, field, words):
    with pytest.raises(TriggerError) as raised:
        validate(when)
    assert raised.value.field == f"when.{field}"
    assert words in str(raised.value)
    assert "\n" not in str(raised.value)


def test_event_targets_need_a_trigger_whose_events_name_that_field():
    with pytest.raises(TriggerError, match="needs a `when` trigger"):
        ScheduledFault(0.0, "kill", "event:process")
    with pytest.raises(TriggerError, match="no field 'node'"):
        ScheduledFault(0.0, "kill", "event:node", when=When(type="send"))
    with pytest.raises(TriggerError, match="names no process"):
        ScheduledFault(0.0, "kill", "event:process", when=When(type="partition"))
    ScheduledFault(0.0, "kill", "event:dst", when=When(type="send"))


def test_selector_values_are_checked_against_the_experiments_processes():
    infos = [ProcessInfo(name, role, None) for name, role in ROLES.items()]
    when = When(type="send", process="leader:client", fields={"dst": "role:dbx", "src": "name:n9", "kind": "APP"})
    problems = dict(trigger_problems(when, infos, {"db"}))
    assert set(problems) == {"process", "fields.dst", "fields.src"}
    assert "elects no leader" in problems["process"]
    assert "no process has role 'dbx'" in problems["fields.dst"]
    assert "no process named 'n9'" in problems["fields.src"]
    assert trigger_problems(When(type="send", process="leader:db"), infos, {"db"}) == []


# -- a live scenario ----------------------------------------------------------------------
async def talker(process):
    """n1 sends n2 a 'ping' at 1 s, 2 s, 3 s, ... of its clock."""
    for _ in range(20):
        await process.sleep(1.0)
        process.send("n2", {"type": "ping"}, port="p")


async def idle(process):
    await trio.sleep_forever()


def scenario(entries, *, heal_at=None, journal=None):
    """Run n1 (talker), n2, n3 with the injector's schedule from t=0; returns the
    journal's trigger, fault and process events (with t) and the world's fingerprint."""

    async def main(world):
        world.spawn("n1", talker, role="db")
        world.spawn("n2", idle, role="db")
        world.spawn("n3", idle, role="db")

        def context():
            infos = [ProcessInfo(p.name, p.role, p.zone) for p in world.processes.values()]
            return Context(infos, lambda role: "n1" if role == "db" else None)

        injector = FaultInjector(world, context)
        injector.schedule(entries, origin_s=world.now)
        if heal_at is not None:
            await world.sleep(heal_at)
            injector.heal_all()
        await world.sleep(12.0 - (heal_at or 0.0))

    world = World(3, journal=journal)
    world.run(main)
    return world


def events_of(path, *types):
    return [event for event in map(json.loads, open(path)) if event["type"] in types]


def test_a_trigger_fires_its_fault_after_its_delay_up_to_times_and_journals_both(tmp_path):
    ping = When(type="send", process="leader:db", fields={"kind": "ping"}, delay_ms=250, times=2)
    entry = ScheduledFault(at_s=1.5, kind="pause", target="event:dst", duration_s=0.5, when=ping)
    scenario([entry], journal=tmp_path / "j.jsonl")
    triggers = events_of(tmp_path / "j.jsonl", "trigger")
    faults = events_of(tmp_path / "j.jsonl", "fault")
    # armed at 1.5 s: the 1 s ping is too early; the 2 s and 3 s pings match; no third
    assert [(e["event"], e["t"]) for e in triggers] == [("arm", 1.5), ("match", 2.0), ("match", 3.0)]
    assert [e["on"] for e in triggers[1:]] == [{"type": "send", "t": 2.0, "process": "n1"}, {"type": "send", "t": 3.0, "process": "n1"}]
    assert all(e["target"] == "name:n2" and e["entry"] == 1 for e in triggers[1:])
    applied = [(e["t"], e["targets"], e["trigger"]) for e in faults if e["event"] == "apply"]
    assert applied == [(2.25, ["n2"], 1), (3.25, ["n2"], 1)]
    assert [e["t"] for e in faults if e["event"] == "heal"] == [2.75, 3.75]


def test_matches_while_a_fire_is_pending_do_not_count(tmp_path):
    # one broadcast is one occurrence: the 3 s ping comes while the 2 s match waits 1.5 s
    ping = When(type="send", fields={"kind": "ping"}, delay_s=1.5, times=2)
    scenario([ScheduledFault(at_s=1.5, kind="pause", target="event:process", duration_s=0.1, when=ping)], journal=tmp_path / "j.jsonl")
    matched = [e["t"] for e in events_of(tmp_path / "j.jsonl", "trigger") if e["event"] == "match"]
    assert matched == [2.0, 4.0]


def test_the_heal_disarms_triggers_and_cancels_pending_fires(tmp_path):
    ping = When(type="send", fields={"kind": "ping"}, delay_s=0.8, times=10)
    scenario([ScheduledFault(at_s=0.0, kind="kill", target="name:n3", duration_s=0.1, when=ping)], heal_at=3.5, journal=tmp_path / "j.jsonl")
    triggers = events_of(tmp_path / "j.jsonl", "trigger")
    assert [(e["event"], e["t"]) for e in triggers] == [("arm", 0.0), ("match", 1.0), ("match", 2.0), ("match", 3.0), ("expired", 3.8)]
    assert [e["t"] for e in events_of(tmp_path / "j.jsonl", "fault") if e["event"] == "apply"] == [1.8, 2.8]


def test_an_unarmed_world_has_no_hooks_and_a_disarmed_one_none_left():
    seen = {}

    async def main(world):
        world.spawn("n1", idle, role="db")
        assert world._record_hooks == {}
        injector = FaultInjector(world, lambda: Context([ProcessInfo("n1", "db", None)], lambda role: "n1"))
        injector.schedule([ScheduledFault(0.0, "pause", "event:process", 1.0, when=When(type="process"))], origin_s=0.0)
        await world.sleep(0.1)
        seen["armed"] = sorted(world._record_hooks)
        injector.heal_all()
        seen["disarmed"] = dict(world._record_hooks)

    World(1).run(main)
    assert seen == {"armed": ["process"], "disarmed": {}}


def test_triggered_runs_are_deterministic(tmp_path):
    ping = When(type="send", process="leader:db", delay_ms=1, times=3)
    entries = [ScheduledFault(at_s=0.5, kind="isolate", target="event:process", duration_s=0.7, when=ping)]
    one = scenario(entries, journal=tmp_path / "a.jsonl").fingerprint
    two = scenario(entries, journal=tmp_path / "b.jsonl").fingerprint
    assert one == two
    assert len([e for e in events_of(tmp_path / "a.jsonl", "fault") if e["event"] == "apply"]) == 3


# -- the table is true to the journals ------------------------------------------------------
def test_the_event_table_lists_every_field_the_components_record(tmp_path):
    """Every event of a listed type in a real etcd run has only fields the table lists."""
    from chaoskube.experiments import registry
    from chaoskube.experiments.runner import run_experiment

    experiment = msgspec.structs.replace(registry.find("etcd-leader-kill-between-append-and-commit"), checkers=["raft-safety"])
    run_experiment(experiment, 1, tmp_path / "run")
    seen: dict[str, set[str]] = {}
    for event in map(json.loads, open(tmp_path / "run" / "journal.jsonl")):
        seen.setdefault(event["type"], set()).update(set(event) - {"t", "type"})
    checked = sorted(set(seen) & set(EVENTS))
    assert {"send", "deliver", "raft-role", "raft-apply", "client-op", "process"} <= set(checked)
    for type_ in checked:
        assert seen[type_] <= EVENTS[type_].fields, (type_, seen[type_] - EVENTS[type_].fields)
    assert [e for e in map(json.loads, open(tmp_path / "run" / "journal.jsonl")) if e["type"] == "fault" and e["event"] == "apply" and e.get("trigger")]


# -- the command line: dry-run shows triggers; bad ones exit 2 in one line -------------------
TRIGGERED = """name: triggered
title: t
description: d
source: s
system: etcd
cluster: {members: 3}
phases: {warmup_s: 1, faults_s: 10, recovery_s: 5, settle_s: 1}
schedule:
  - kind: kill
    target: event:process
    duration_s: 2
    at_s: 1
    when: WHEN
checkers: [raft-safety]
"""


def test_dry_run_shows_the_trigger_and_its_target(tmp_path):
    from tests.cli.test_cli import chaoskube

    path = tmp_path / "triggered.yaml"
    path.write_text(TRIGGERED.replace("WHEN", '{type: send, process: "leader:etcd", fields: {kind: APP}, delay_ms: 1, times: 2}'))
    result = chaoskube("run", str(path), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "armed at 1 s, when send (process leader:etcd, kind=APP), +1 ms, up to 2 times: kill event:process -> the process the matching event names for 2 s" in result.stdout


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ("{type: raft-rol}", "field `schedule[0].when.type`: unknown event type 'raft-rol'; known: "),
        ("{type: send, fields: {knd: APP}}", "field `schedule[0].when.fields.knd`: a 'send' event has no field 'knd'; its fields: dst, id, kind, port, src"),
        ("{type: send, process: 'leader:etcdx'}", "field `schedule[0].when.process`: leader:etcdx: no process has role 'etcdx' in this experiment"),
        ("{type: send, times: 0}", "field `schedule[0].when.times`: must be between 1 and 1000, not 0"),
        ("{type: send, delay: 1}", "field `schedule[0].when.delay`: unknown field"),
        ("{type: partition}", "field `schedule[0].target`: 'event:process': a 'partition' event names no process"),
    ],
)
def test_bad_triggers_exit_2_with_one_line_naming_file_and_field(tmp_path, when, message):
    from tests.cli.test_cli import chaoskube

    path = tmp_path / "bad.yaml"
    path.write_text(TRIGGERED.replace("WHEN", when))
    result = chaoskube("run", str(path), "--dry-run")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(path) in lines[0] and message in lines[0], lines[0]

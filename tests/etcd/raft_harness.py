"""An in-memory network of pure Raft members, for scripted and random tests.

Each member has an in-memory disk (what it persisted from its Ready records)
and a state machine that records what it applied: the list of
(index, term, data) of applied entries, so that its snapshot is that list too.
Messages are delivered synchronously in FIFO order; a message is dropped at
delivery if its link is cut, its target is down, or ``drop_if`` says so (as
the simulated network drops a message whose link was cut while in flight).

The network watches every step for two safety violations and records them in
``violations`` (it does not raise, so that tests of the broken gallery can
assert on them):

- election safety: two leaders in one term;
- state machine safety: two members applied different entries at one index;

and, when a test asks (``check_log_matching``, ``check_leader_completeness``),
log matching and leader completeness.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chaoskube.etcd.raft import (
    Entry,
    HardState,
    Message,
    Raft,
    RaftConfig,
    ReadState,
    Ready,
    Role,
    Snapshot,
    Storage,
)

# Bound on deliveries in one ``stabilize``: a correct group goes quiet long before.
MAX_DELIVERIES = 100_000


@dataclass
class Disk:
    """What one member persisted: survives crash and restart."""

    hard_state: HardState = HardState()
    snapshot: Snapshot | None = None
    entries: list[Entry] = field(default_factory=list)

    def persist(self, ready: Ready) -> None:
        # Contract step 1: hard state, entries, snapshot.
        if ready.hard_state is not None:
            self.hard_state = ready.hard_state
        if ready.snapshot is not None:
            self.snapshot = ready.snapshot
            self.entries = []
        if ready.entries:
            first = ready.entries[0].index
            self.entries = [entry for entry in self.entries if entry.index < first]
            self.entries.extend(ready.entries)

    def storage(self) -> Storage:
        return Storage(hard_state=self.hard_state, snapshot=self.snapshot, entries=tuple(self.entries))


def election_timeout_drawer(election_tick: int, seed: int) -> Callable[[], int]:
    generator = random.Random(seed)
    return lambda: generator.randrange(election_tick, 2 * election_tick)


class Network:
    """Members ``ids`` of one Raft group, each an instance of ``variant``."""

    def __init__(
        self,
        ids: Iterable[int] = (1, 2, 3),
        *,
        variant: type[Raft] = Raft,
        storages: dict[int, Storage] | None = None,
        seed: int = 0,
        **config_options: Any,
    ) -> None:
        self.ids = tuple(ids)
        self.variant = variant
        self.seed = seed
        self.config_options = config_options
        self.disks: dict[int, Disk] = {}
        for member in self.ids:
            storage = (storages or {}).get(member, Storage())
            self.disks[member] = Disk(storage.hard_state, storage.snapshot, list(storage.entries))
        self.nodes: dict[int, Raft | None] = {}
        self.state: dict[int, list[tuple[int, int, Any]]] = {}
        self.read_states: dict[int, list[ReadState]] = {member: [] for member in self.ids}
        self.in_flight: deque[Message] = deque()
        self.cut: set[tuple[int, int]] = set()
        self.drop_if: Callable[[Message], bool] | None = None
        self.loss_rate = 0.0
        # Deliver in a random order (drawn from the seed) instead of FIFO.
        self.reorder = False
        self._loss = random.Random(seed)
        self._restarts = 0
        self.leaders: dict[int, set[int]] = {}
        self.committed: dict[int, tuple[int, Any]] = {}
        self.violations: list[str] = []
        for member in self.ids:
            self._start(member)

    # -- members --------------------------------------------------------------------

    def config(self, member: int) -> RaftConfig:
        return RaftConfig(id=member, peers=self.ids, **self.config_options)

    def _start(self, member: int) -> None:
        disk = self.disks[member]
        config = self.config(member)
        self._restarts += 1
        drawer = election_timeout_drawer(config.election_tick, self.seed * 1_000_003 + member * 1009 + self._restarts)
        self.nodes[member] = self.variant(config, disk.storage(), drawer)
        # Restore the state machine from the stored snapshot (contract, on restart).
        self.state[member] = list(disk.snapshot.data) if disk.snapshot is not None else []
        self.process(member)

    def node(self, member: int) -> Raft:
        node = self.nodes[member]
        assert node is not None, f"member {member} is down"
        return node

    def crash(self, member: int) -> None:
        """Kill: memory is lost, the disk stays."""
        self.nodes[member] = None

    def restart(self, member: int) -> None:
        assert self.nodes[member] is None, "restart of a running member"
        self._start(member)

    def up(self) -> list[int]:
        return [member for member in self.ids if self.nodes[member] is not None]

    # -- faults ------------------------------------------------------------------------

    def isolate(self, member: int) -> None:
        for other in self.ids:
            if other != member:
                self.cut.add((member, other))
                self.cut.add((other, member))

    def partition(self, *groups: Iterable[int]) -> None:
        group_of = {member: position for position, group in enumerate(groups) for member in group}
        for a in self.ids:
            for b in self.ids:
                if a != b and group_of.get(a) != group_of.get(b):
                    self.cut.add((a, b))

    def heal(self) -> None:
        self.cut.clear()
        self.drop_if = None

    # -- driving -------------------------------------------------------------------------

    def process(self, member: int) -> None:
        """Run the caller's contract for every Ready the member has."""
        node = self.nodes[member]
        if node is None:
            return
        while node.has_ready():
            ready = node.ready()
            self.disks[member].persist(ready)  # 1. persist
            self.in_flight.extend(ready.messages)  # 2. send
            if ready.snapshot is not None:  # 3. apply
                self.state[member] = list(ready.snapshot.data)
            for entry in ready.committed_entries:
                self._apply(member, entry)
            self.read_states[member].extend(ready.read_states)
            node.advance(ready)  # 4. advance
        self._observe(member)

    def _apply(self, member: int, entry: Entry) -> None:
        state = self.state[member]
        expected = state[-1][0] + 1 if state else 1
        assert entry.index == expected, f"member {member} applies {entry.index}, expected {expected}"
        state.append((entry.index, entry.term, entry.data))
        seen = self.committed.setdefault(entry.index, (entry.term, entry.data))
        if seen != (entry.term, entry.data):
            self.violations.append(
                f"state machine safety: member {member} applied {(entry.term, entry.data)} "
                f"at index {entry.index}, another applied {seen}"
            )

    def _observe(self, member: int) -> None:
        node = self.nodes[member]
        if node is None or node.role is not Role.LEADER:
            return
        leaders = self.leaders.setdefault(node.term, set())
        leaders.add(member)
        if len(leaders) > 1:
            message = f"election safety: leaders {sorted(leaders)} in term {node.term}"
            if message not in self.violations:
                self.violations.append(message)

    def _dropped(self, message: Message) -> bool:
        if self.nodes.get(message.to) is None:
            return True
        if (message.from_, message.to) in self.cut:
            return True
        if self.drop_if is not None and self.drop_if(message):
            return True
        return self.loss_rate > 0 and self._loss.random() < self.loss_rate

    def deliver_one(self) -> Message | None:
        if self.reorder and len(self.in_flight) > 1:
            self.in_flight.rotate(-self._loss.randrange(len(self.in_flight)))
        message = self.in_flight.popleft()
        if self._dropped(message):
            return None
        node = self.node(message.to)
        node.step(message)
        self.process(message.to)
        return message

    def deliver(self, count: int) -> None:
        """Deliver at most ``count`` messages; the rest stay in flight."""
        for _ in range(count):
            if not self.in_flight:
                return
            self.deliver_one()

    def stabilize(self) -> None:
        """Process and deliver until nothing is left in flight."""
        for member in self.up():
            self.process(member)
        for _ in range(MAX_DELIVERIES):
            if not self.in_flight:
                return
            self.deliver_one()
        raise AssertionError("the network did not go quiet")

    def tick(self, member: int, times: int = 1) -> None:
        for _ in range(times):
            self.node(member).tick()
            self.process(member)
            self.stabilize()

    def tick_all(self, times: int = 1) -> None:
        for _ in range(times):
            for member in self.up():
                self.node(member).tick()
                self.process(member)
            self.stabilize()

    def campaign(self, member: int) -> None:
        self.node(member).campaign()
        self.process(member)
        self.stabilize()

    def propose(self, member: int, data: Any) -> bool:
        accepted = self.node(member).propose(data)
        self.process(member)
        self.stabilize()
        return accepted

    def read_index(self, member: int, context: Any) -> bool:
        accepted = self.node(member).read_index(context)
        self.process(member)
        self.stabilize()
        return accepted

    def compact(self, member: int, index: int) -> Snapshot:
        node = self.node(member)
        data = tuple(item for item in self.state[member] if item[0] <= index)
        snapshot = node.compact(index, data)
        disk = self.disks[member]
        disk.snapshot = snapshot
        disk.entries = [entry for entry in disk.entries if entry.index > index]
        return snapshot

    # -- views ----------------------------------------------------------------------------

    def leader(self) -> int | None:
        """The up member that is leader in the highest term, if any."""
        best = None
        for member in self.up():
            node = self.node(member)
            if node.role is Role.LEADER and (best is None or node.term > self.node(best).term):
                best = member
        return best

    def log_of(self, member: int) -> dict[int, Entry]:
        node = self.node(member)
        return {entry.index: entry for entry in node.log.entries}

    def check_leader_completeness(self) -> None:
        """Leader Completeness (§5.4): every up leader holds every entry applied anywhere.

        Sound only in scripts where the leader was elected after those entries
        were committed (a deposed leader that does not know it yet may lack them).
        """
        for member in self.up():
            node = self.node(member)
            if node.role is not Role.LEADER:
                continue
            for index, (term, data) in sorted(self.committed.items()):
                if index <= node.log.offset:
                    continue
                if node.log.term(index) != term:
                    self.violations.append(
                        f"leader completeness: leader {member} of term {node.term} lacks "
                        f"committed entry {index} (term {term}, data {data!r})"
                    )
                    return

    def check_log_matching(self) -> None:
        """Log Matching (§5.3): same index and term implies identical prefixes."""
        logs = {member: self.log_of(member) for member in self.up()}
        members = sorted(logs)
        for position, a in enumerate(members):
            for b in members[position + 1 :]:
                common = sorted(set(logs[a]) & set(logs[b]), reverse=True)
                matched = next((i for i in common if logs[a][i].term == logs[b][i].term), None)
                if matched is None:
                    continue
                for index in common:
                    if index <= matched and logs[a][index] != logs[b][index]:
                        self.violations.append(
                            f"log matching: members {a} and {b} agree on term at {matched} but differ at {index}"
                        )
                        return

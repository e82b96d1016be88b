"""The deterministic simulation runtime: world, virtual clock, random tree, network,
processes, disks and journal. See docs/design.md."""

from chaoskube.sim.buggify import POINTS as BUGGIFY_POINTS, Buggify, BuggifySpec
from chaoskube.sim.core import ANY, Message
from chaoskube.sim.determinism import make_trio_deterministic
from chaoskube.sim.disk import Disk
from chaoskube.sim.journal import Journal, journal_sha256, read_journal
from chaoskube.sim.network import LinkProfile, Network
from chaoskube.sim.outcomes import Failed, Ok, Outcome, Unknown
from chaoskube.sim.process import Inbox, Main, Process, State
from chaoskube.sim.randomness import MAX_SEED, RandomTree, derive_seed, seed_error
from chaoskube.sim.world import Livelock, SimulationStuck, Watchdog, World

__all__ = [
    "ANY",
    "BUGGIFY_POINTS",
    "Buggify",
    "BuggifySpec",
    "Disk",
    "Failed",
    "Inbox",
    "Journal",
    "LinkProfile",
    "Livelock",
    "MAX_SEED",
    "Main",
    "Message",
    "Network",
    "Ok",
    "Outcome",
    "Process",
    "RandomTree",
    "SimulationStuck",
    "State",
    "Unknown",
    "Watchdog",
    "World",
    "derive_seed",
    "journal_sha256",
    "make_trio_deterministic",
    "read_journal",
    "seed_error",
]

"""Mutations of an experiment's faults, for coverage-guided ``explore --guided``, and the
*faults file* that records one (``chaoskube run NAME --faults FILE``).

A mutation changes what an experiment does to the cluster, never the cluster or the
workload, so a mutant shares its boot with the experiment (a forked campaign boots once):

- on the ``schedule`` entries: a fault moved in time (``shift``), lengthened or shortened
  (``stretch``), aimed at another target (``retarget``: another selector of the same role,
  a named process, a zone), added (``add``: a copy of an entry at another time, or a fault
  of the random nemesis's vocabulary, ``faults/nemesis.NEMESIS_KINDS``, that can apply to
  this system) or dropped (``drop``);
- on the ``nemesis`` spec, generically over its fields: a number nudged (``count``,
  ``after_s``, ``window_s``, the durations, ``seed_offset`` -- another generator), a kind
  added to or dropped from ``kinds``.

:data:`FIELD_MUTATORS` maps an experiment field to its mutator; a field added later
(the workload generator's weights, say) needs one function ``(rng, experiment, context) ->
(experiment, description) | None`` and one entry there.

Contract of :func:`mutate`: a pure function of the experiment, the ``random.Random`` it is
given and the context; it stacks 1 to :data:`MAX_STACK` mutations, each checked with the
same checks as an experiment file (``registry``: kinds, parameters, targets resolved
against the processes the experiment builds, durations within the fault phase) and, in
time, :func:`timeline_problems` (no ``leader:`` fault where an earlier one may have left
the role without a leader: it would be skipped and the run inconclusive); a candidate
that fails them is drawn again (bounded: :data:`MAX_ATTEMPTS`), so every mutant it
returns is a valid experiment that applies its faults. Same inputs, same mutant.

The faults file (:func:`faults_yaml`, :func:`with_faults`) holds exactly ``schedule`` and
``nemesis``, with the mutant's lineage as comments; ``chaoskube run NAME --faults FILE``
runs the experiment with them (the same checks), and the replay command of such a run
names it, so every guided run is replayable as any other.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from chaoskube.experiments.model import Experiment, ExperimentError, FaultEntry, experiment_dir, field_message
from chaoskube.faults.nemesis import NEMESIS_KINDS, NemesisSpec
from chaoskube.faults.targets import ProcessInfo

#: Most mutations stacked on one mutant (AFL's havoc stacks several too).
MAX_STACK = 3
#: Draws per mutation before giving up on it (each is checked; most pass).
MAX_ATTEMPTS = 25
#: The longest schedule a mutant may have (``add`` stops there).
MAX_SCHEDULE = 24
#: Times are rounded to the microsecond, as the nemesis rounds its own.
DIGITS = 6


@dataclass(frozen=True)
class MutationContext:
    """What a mutation may aim at: the processes the experiment builds (None when the
    system cannot tell before a run), the roles whose leader it can name, whether it
    performs API-level faults, and the length of the fault phase."""

    processes: tuple[ProcessInfo, ...] | None
    leader_roles: frozenset[str]
    admin: bool
    faults_s: float
    #: The roles faults may aim at: those the experiment's own faults aim at and those the
    #: random nemesis knows (the harness's own processes -- probes, watchers, the
    #: bootstrapper -- are not the system under test).
    roles: frozenset[str] = frozenset()
    #: How long each leader role may be without a leader after its leader is disrupted
    #: (System.leader_gap_s): :func:`timeline_problems` keeps ``leader:`` faults out of it.
    leader_gap_s: dict[str, float] = field(default_factory=dict)

    def targets(self) -> list[str]:
        """Every target a ``retarget`` may pick, sorted."""
        if not self.processes:
            return []
        aimed = [info for info in self.processes if info.role in self.roles]
        roles = sorted({info.role for info in aimed if info.role})
        zones = sorted({info.zone for info in aimed if info.zone})
        found = [f"name:{info.name}" for info in aimed]
        for role in roles:
            found += [f"role:{role}", f"random:{role}"]
            if role in self.leader_roles:
                found += [f"leader:{role}", f"follower:{role}"]
        found += [f"zone:{zone}" for zone in zones]
        return sorted(set(found))


def context_for(experiment: Experiment) -> MutationContext:
    """The :class:`MutationContext` of ``experiment`` (its system resolves the processes)."""
    from chaoskube.experiments.registry import SYSTEMS

    system = SYSTEMS[experiment.system]
    cluster, workload = system.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    infos = system.process_infos(cluster, workload)
    aimed = [entry.target for entry in experiment.schedule] + [target for _, target, _ in NEMESIS_KINDS.values() if target]
    roles: set[str] = set()
    for target in aimed:
        selector, _, argument = target.partition(":")
        if selector in ("role", "random", "leader", "follower"):
            roles.add(argument)
        elif selector == "name":
            roles.update(info.role for info in infos or () if info.name == argument and info.role)
    return MutationContext(
        tuple(infos) if infos is not None else None, frozenset(system.LEADER_ROLES), bool(system.PROBES), float(experiment.phases.faults_s), frozenset(roles),
        dict(sorted(system.leader_gap_s(cluster).items())),
    )


def problems(experiment: Experiment, *, operator: bool = False) -> list[str]:
    """What ``chaoskube validate`` would say about ``experiment`` (empty: it may run);
    ``operator``: it runs under ``serve --run`` (faults may target role:operator)."""
    from chaoskube.experiments import registry

    return registry._semantic_problems(experiment, operator=operator)  # the file checks, on a built experiment


#: Fault kinds that leave a group's leader leading (they slow, skew or reorder, or act
#: on nodes and webhooks only); any other kind on a member may take its leader away.
KEEPS_LEADER = frozenset({"link-delay", "link-duplicate", "link-reorder", "clock-drift", "clock-strobe", "webhook-delay", "webhook-error", "drain", "kubelet-stop"})
#: Selectors whose argument is a role (or ``*``, every role).
ROLE_SELECTORS = frozenset({"role", "random", "leader", "follower", "minority", "majority", "minority-third", "subset", "primaries"})


def _members_hit(target: str, role: str, processes: Sequence[ProcessInfo]) -> tuple[int, int]:
    """(how many members of ``role`` a fault on ``target`` may take at most, how many
    there are): a static bound, before the run."""
    members = [info for info in processes if info.role == role]
    selector, _, argument = target.partition(":")
    if selector == "name":
        hit = sum(1 for info in members if info.name == argument)
    elif selector == "zone":
        hit = sum(1 for info in members if info.zone == argument)
    elif selector in ROLE_SELECTORS and argument in (role, "*"):
        hit = {"role": len(members), "majority": len(members) // 2 + 1, "subset": len(members)}.get(selector, max(1, (len(members) - 1) // 2) if selector in ("minority", "minority-third") else 1)
    else:
        hit = 0
    return min(hit, len(members)), len(members)


def timeline_problems(experiment: Experiment, context: MutationContext) -> list[str]:
    """The schedule's ``leader:ROLE`` faults that may find no leader when they fall due,
    one line each: another fault that may take that role's leader away began less than the
    role's election time before (``context.leader_gap_s``), or took a majority of the group
    and was healed less than that before. Such a fault is skipped at run time and the run
    is inconclusive (it did not test what its schedule says), so a mutant must not add one
    (:func:`mutate`). Triggered faults (``when``) fall due at no fixed time: not checked."""
    if not context.processes or not context.leader_gap_s:
        return []
    timed = [entry for entry in experiment.schedule if entry.when is None]
    found = []
    for entry in timed:
        selector, _, role = entry.target.partition(":")
        if selector != "leader" or role not in context.leader_gap_s:
            continue
        gap = context.leader_gap_s[role]
        for other in timed:
            if other is entry or other.kind in KEEPS_LEADER or other.at_s > entry.at_s:
                continue
            hit, size = _members_hit(other.target, role, context.processes)
            if not hit:
                continue
            end = other.at_s + (other.duration_s if other.duration_s is not None else context.faults_s)
            leaderless_until = (end if 2 * hit > size else other.at_s) + gap
            if entry.at_s < leaderless_until:
                found.append(
                    f"{entry.kind} on {entry.target} at_s {entry.at_s:g} falls before t={leaderless_until:g}: {other.kind} on {other.target} at_s {other.at_s:g} "
                    f"may leave {role!r} without a leader until then (its election takes up to {gap:g} s)"
                )
                break
    return found


# -- the mutators ---------------------------------------------------------------------------------

Mutator = Callable[[random.Random, Experiment, MutationContext], "tuple[Experiment, str] | None"]


def _fits(entry: FaultEntry, faults_s: float) -> FaultEntry:
    """``entry`` moved and cut to lie inside the fault phase (unless it may be clipped)."""
    at_s = min(max(0.0, entry.at_s), faults_s)
    duration = entry.duration_s
    if duration is not None and not entry.clip_to_phase:
        duration = max(min(duration, faults_s - at_s), 0.0)
        if duration <= 0.0:  # no room after it: move it back instead
            duration = min(entry.duration_s or 1.0, faults_s)
            at_s = max(0.0, faults_s - duration)
    return msgspec.structs.replace(entry, at_s=round(at_s, DIGITS), duration_s=None if duration is None else round(duration, DIGITS))


def _replace_entry(experiment: Experiment, index: int, entry: FaultEntry) -> Experiment:
    schedule = list(experiment.schedule)
    schedule[index] = entry
    return msgspec.structs.replace(experiment, schedule=schedule)


def shift(rng: random.Random, experiment: Experiment, context: MutationContext) -> tuple[Experiment, str] | None:
    if not experiment.schedule:
        return None
    index = rng.randrange(len(experiment.schedule))
    entry = experiment.schedule[index]
    reach = max(1.0, context.faults_s / 5)
    moved = _fits(msgspec.structs.replace(entry, at_s=entry.at_s + rng.uniform(-reach, reach)), context.faults_s)
    return _replace_entry(experiment, index, moved), f"shift schedule[{index}] at_s {entry.at_s:g} -> {moved.at_s:g}"


def stretch(rng: random.Random, experiment: Experiment, context: MutationContext) -> tuple[Experiment, str] | None:
    timed = [index for index, entry in enumerate(experiment.schedule) if entry.duration_s]
    if not timed:
        return None
    index = rng.choice(timed)
    entry = experiment.schedule[index]
    assert entry.duration_s is not None
    changed = _fits(msgspec.structs.replace(entry, duration_s=max(0.05, entry.duration_s * rng.uniform(0.25, 2.5))), context.faults_s)
    return _replace_entry(experiment, index, changed), f"stretch schedule[{index}] duration_s {entry.duration_s:g} -> {changed.duration_s:g}"


def retarget(rng: random.Random, experiment: Experiment, context: MutationContext) -> tuple[Experiment, str] | None:
    targets = context.targets()
    if not experiment.schedule or not targets:
        return None
    index = rng.randrange(len(experiment.schedule))
    entry = experiment.schedule[index]
    others = [target for target in targets if target != entry.target]
    if not others:
        return None
    target = rng.choice(others)
    return _replace_entry(experiment, index, msgspec.structs.replace(entry, target=target)), f"retarget schedule[{index}] {entry.target} -> {target}"


def add(rng: random.Random, experiment: Experiment, context: MutationContext) -> tuple[Experiment, str] | None:
    if len(experiment.schedule) >= MAX_SCHEDULE or context.faults_s <= 0:
        return None
    duration = round(rng.uniform(0.5, max(0.6, min(15.0, context.faults_s / 2))), DIGITS)
    at_s = rng.uniform(0.0, max(0.0, context.faults_s - duration))
    if experiment.schedule and rng.random() < 0.5:
        model = rng.choice(experiment.schedule)
        entry = msgspec.structs.replace(model, at_s=at_s, duration_s=duration if model.duration_s is not None else None)
        what = f"copy of {model.kind} on {model.target}"
    else:
        name = rng.choice(sorted(name for name in NEMESIS_KINDS if name != "swizzle"))
        kind, target, params = NEMESIS_KINDS[name]
        entry = FaultEntry(at_s=at_s, kind=kind, target=target, duration_s=duration, params=dict(params))
        what = f"{kind} on {target} ({name})"
    entry = _fits(entry, context.faults_s)
    return msgspec.structs.replace(experiment, schedule=[*experiment.schedule, entry]), f"add {what} at_s {entry.at_s:g} for {entry.duration_s}"


def drop(rng: random.Random, experiment: Experiment, context: MutationContext) -> tuple[Experiment, str] | None:
    if len(experiment.schedule) < (1 if experiment.nemesis is not None else 2):
        return None  # an experiment keeps at least one fault
    index = rng.randrange(len(experiment.schedule))
    entry = experiment.schedule[index]
    return msgspec.structs.replace(experiment, schedule=[item for i, item in enumerate(experiment.schedule) if i != index]), f"drop schedule[{index}] {entry.kind} on {entry.target}"


def mutate_schedule(rng: random.Random, experiment: Experiment, context: MutationContext) -> tuple[Experiment, str] | None:
    """One of the schedule's operators, drawn uniformly among those that apply."""
    operators = [shift, stretch, retarget, add, drop]
    rng.shuffle(operators)
    for operator in operators:
        found = operator(rng, experiment, context)
        if found is not None:
            return found
    return None


def _nudge(rng: random.Random, value: Any, name: str) -> Any:
    """A number moved a little: an int by one or a fifth, a float by a factor."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        step = max(1, abs(value) // 5)
        return max(0, value + rng.choice((-step, step)))
    if isinstance(value, float) and math.isfinite(value):
        return round(max(0.0, value * rng.uniform(0.5, 1.6) if value else rng.uniform(0.0, 5.0)), DIGITS)
    return value


def mutate_struct(rng: random.Random, spec: msgspec.Struct, vocabularies: dict[str, Sequence[str]]) -> tuple[msgspec.Struct, str] | None:
    """One field of a msgspec struct changed, generically: a number nudged, a list of
    names of ``vocabularies[field]`` with one name added or dropped. None when the struct
    has nothing to change. The result is rebuilt through msgspec (its own checks run)."""
    fields = [field.name for field in msgspec.structs.fields(spec)]
    choices = [name for name in fields if isinstance(getattr(spec, name), (int, float)) or name in vocabularies]
    if not choices:
        return None
    name = rng.choice(choices)
    value = getattr(spec, name)
    if name in vocabularies:
        current = list(value)
        missing = [word for word in vocabularies[name] if word not in current]
        if current and (not missing or rng.random() < 0.5) and len(current) > 1:
            gone = rng.choice(current)
            new: Any = [word for word in current if word != gone]
            what = f"{name} - {gone}"
        elif missing:
            extra = rng.choice(missing)
            new, what = [*current, extra], f"{name} + {extra}"
        else:
            return None
    else:
        new = _nudge(rng, value, name)
        if new == value:
            return None
        what = f"{name} {value!r} -> {new!r}"
    try:
        changed = msgspec.convert(msgspec.to_builtins(spec) | {name: new}, type=type(spec))
    except (msgspec.ValidationError, ValueError):
        return None
    return changed, what


def mutate_nemesis(rng: random.Random, experiment: Experiment, context: MutationContext) -> tuple[Experiment, str] | None:
    if experiment.nemesis is None:
        return None
    found = mutate_struct(rng, experiment.nemesis, {"kinds": sorted(NEMESIS_KINDS)})
    if found is None:
        return None
    spec, what = found
    assert isinstance(spec, NemesisSpec)
    return msgspec.structs.replace(experiment, nemesis=spec), f"nemesis {what}"


#: experiment field -> its mutator (module doc). The schedule's is eligible even when
#: empty (``add``); any other only when the experiment sets the field.
FIELD_MUTATORS: dict[str, Mutator] = {
    "schedule": mutate_schedule,
    "nemesis": mutate_nemesis,
}


@dataclass(frozen=True)
class Mutant:
    experiment: Experiment
    steps: tuple[str, ...]  # one line per mutation applied, in order


def mutate(experiment: Experiment, rng: random.Random, context: MutationContext, *, stack: int | None = None) -> Mutant:
    """1 to :data:`MAX_STACK` mutations of ``experiment`` (module doc), each valid; the
    experiment itself (no steps) if nothing could be changed."""
    count = stack if stack is not None else rng.randint(1, MAX_STACK)
    fields = [name for name in FIELD_MUTATORS if name == "schedule" or getattr(experiment, name, None) not in (None, [], {})]
    current, steps = experiment, []
    for _ in range(count):
        for _attempt in range(MAX_ATTEMPTS):
            found = FIELD_MUTATORS[rng.choice(fields)](rng, current, context)
            if found is None:
                continue
            candidate, what = found
            if not problems(candidate) and not set(timeline_problems(candidate, context)) - set(timeline_problems(current, context)):
                current = candidate
                steps.append(what)
                break
    return Mutant(current, tuple(steps))


# -- the faults file ------------------------------------------------------------------------------


class FaultsFile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """``--faults FILE``: what replaces the experiment's faults."""

    schedule: list[FaultEntry] = []
    nemesis: NemesisSpec | None = None


def faults_yaml(experiment: Experiment, comments: Sequence[str] = ()) -> str:
    """The faults file of ``experiment``: its ``schedule`` and ``nemesis``, after
    ``comments`` (each a ``#`` line)."""
    import yaml

    document = msgspec.to_builtins(FaultsFile(schedule=list(experiment.schedule), nemesis=experiment.nemesis))
    header = "".join(f"# {line}\n" for line in comments)
    return header + yaml.safe_dump(document, sort_keys=True, default_flow_style=None, width=200)


def load_faults(path: str | Path) -> FaultsFile:
    """Read a faults file; ExperimentError (one line naming the file and field) when bad."""
    from chaoskube.api.files import EXPERIMENT_MAX_BYTES, TooLarge, read_limited
    from chaoskube.api.manifests import ManifestError, load_yaml_value

    try:
        document = load_yaml_value(read_limited(Path(path), EXPERIMENT_MAX_BYTES, "a faults file"), str(path))
    except TooLarge as error:
        raise ExperimentError(str(error)) from None
    except OSError as error:
        raise ExperimentError(f"--faults {path}: cannot read: {error.strerror or error}") from None
    except ManifestError as error:
        raise ExperimentError(f"--faults {path}: {f'field `{error.field}`: ' if error.field else ''}{error.reason}") from None
    if not isinstance(document, dict):
        raise ExperimentError(f"--faults {path}: holds {'nothing' if document is None else 'a ' + type(document).__name__}, not a mapping with `schedule` and/or `nemesis`")
    try:
        return msgspec.convert(document, type=FaultsFile)
    except msgspec.ValidationError as error:
        raise ExperimentError(f"--faults {path}: {field_message(str(error))}") from None
    except ValueError as error:  # NemesisSpec's own checks
        raise ExperimentError(f"--faults {path}: field `nemesis`: {error}") from None


def with_faults(experiment: Experiment, path: str | Path, *, operator: bool = False) -> Experiment:
    """``experiment`` with its ``schedule`` and ``nemesis`` replaced by those of the faults
    file ``path`` (``run --faults FILE``, ``serve --faults FILE``), checked as an
    experiment file is (``operator``: as for ``serve --run``); recorded in ``faults_file``
    (absolute), so the replay command names it."""
    path = Path(path)
    faults = load_faults(path)
    changed = msgspec.structs.replace(experiment, schedule=list(faults.schedule), nemesis=faults.nemesis, faults_file=str(path.resolve()))
    found = problems(changed, operator=operator)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ExperimentError(f"--faults {path}: {found[0]}{more}")
    return changed

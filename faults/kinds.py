"""Fault kinds: each is planned as data by a pure function and applied/healed by thin code.

``plan(kind, target, params, context, rng)`` resolves the target and computes everything
the fault will do (which processes, which grudge, which link profile) without touching the
world. ``apply(world, plan)`` does its action (a kill); ``reconcile(world, active,
baseline, admin)`` makes every state effect (grudge, links, pauses, clocks, disks,
stopped kubelets, erring webhook servers, drains under way) what the active plans imply;
``heal(world, plan, active)`` restarts what it killed. Healing is idempotent and
order-independent: overlapping faults on the same resources heal right. Effects on a
component inside a process (a kubelet, a webhook server) live in the process's memory:
a process restarted by a heal is reconciled at once, so they hold across restarts too.

Kinds (``params`` in brackets, with defaults):

- ``kill``          — SIGKILL the targets; heal restarts them from their disks.
- ``lossy-crash``   — kill with ``lose_unsynced_on_crash`` on: writes not yet fsynced are
  lost (a power cut, or a disk that acknowledges fsync falsely); heal restarts.
- ``pause``         — SIGSTOP / long GC pause; heal resumes (the process sees time jump).
- ``isolate``       — cut each target off from the rest of its role group, both ways
  [``scope``: "peers" (same role, default) or "all"].
- ``split``         — minority/majority partition of the targets' role group
  [``leader_in``: "minority" (default) | "majority" | "any"].
- ``bridge``        — two halves sharing one node, across the role group.
- ``partition``     — one of Jepsen's partition specs over the targets' role group
  [``spec``: "majority" (default) | "one" | "majorities-ring" | "minority-third" |
  "primaries"], the grudge drawn with the seed when the fault fires (faults/grudge.py
  ``partition_spec``, transcribing jepsen/src/jepsen/nemesis/combined.clj ``grudge``);
  ``primaries`` isolates the group's current leader. A spec that cuts nobody (a
  minority third of three) is skipped, and says so.
- ``clock-strobe``  — flip the targets' clocks ``delta_ms`` forward and back again every
  ``period_ms`` for as long as the fault lasts [``delta_ms``: 200, ``period_ms``: 100], as
  Jepsen's clock nemesis strobes them (jepsen/src/jepsen/nemesis/time.clj
  ``strobe-gen-select``: deltas 4 ms to 262 s, periods 1 ms to 1 s); each flip is a
  ``clock`` event. Heal leaves the clock where the other clock faults put it.
- ``clock-jump``    — step the targets' clocks [``seconds``: 60]; heal steps them back.
- ``clock-drift``   — run the targets' clocks fast or slow [``drift``: 0.01]; heal stops it.
- ``link-delay``    — every link to and from the targets [``delay_ms``: 100, ``jitter_ms``: 0].
- ``link-loss``     — [``loss``: 0.2]; ``link-duplicate`` [``duplicate``: 0.2];
  ``link-reorder``  [``reorder``: 0.5, ``window_ms``: 50].
- ``slow-disk``     — fsync latency of the targets' disks [``fsync_ms``: 500]; heal restores it.
- ``skip-fsync``    — the targets' disks acknowledge fsync without syncing (etcd's
  ``--unsafe-no-fsync``, or a disk that lies); combine with ``lossy-crash`` to lose
  acknowledged writes. Heal makes fsync honest again.

Kinds for a whole Kubernetes cluster (chaoskube/cluster.py: roles etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, node, webhook). Every kind above works on those
roles too: the selectors (``leader:kube-scheduler``, ``zone:zone-a`` ...) pick the processes.

- ``node-failure``  — power off the machine of each target (meant for ``role:node``
  processes): a kill that loses every write not fsynced, so the node's container runtime
  state (kept on the disk, never synced: chaoskube/node/runtime.py) is gone and its pods die
  with it, as after a power cut; what was synced (an etcd member's WAL) survives. Heal
  powers it on: the process restarts from its disk and the kubelet starts the pods bound
  to it again. Upstream: "Node shutdown" in the cluster failure modes
  (https://kubernetes.io/docs/tasks/debug/debug-cluster/#a-general-overview-of-cluster-failure-modes).
- ``zone-outage``   — every target (meant for ``zone:NAME``) fails at once
  [``mode``: "power" (default) | "network"]. "power": each target as by ``node-failure``
  (a power or cooling failure of the zone: etcd member, API server, controllers and nodes
  in it all go down and restart on heal); "network": the zone is cut off from every other
  process, both ways, while its processes still talk to each other (a zone's uplink
  failure). Chosen default: power, the outage a multi-zone cluster is built to survive
  ("Running in multiple zones",
  https://kubernetes.io/docs/setup/best-practices/multiple-zones/).
- ``control-plane-partition`` — a grudge cutting the targets (typically ``role:node``) off
  from the other side, both ways, while each side still talks within itself
  [``from_roles``: "*" (default: every other process) | "control-plane" (etcd,
  kube-apiserver, kube-controller-manager, kube-scheduler) | a comma-separated list of
  roles]. With ``role:node`` and "control-plane", kubelets lose the API servers while pods
  keep serving one another and clients on the nodes: the partition after which the node
  lifecycle controller must not evict everything ("Rate limits on eviction",
  https://kubernetes.io/docs/concepts/architecture/nodes/#rate-limits-on-eviction).
- ``webhook-delay`` — an admission webhook (meant for ``role:webhook``) answers late
  [``delay_ms``: 6000]: every message into the targets is delayed by ``delay_ms``, so a
  request reaches the handler that much later, as a handler that sleeps before answering
  would (the answer goes back undelayed). Above the webhook's ``timeoutSeconds`` the API
  server's call ends in ``context deadline exceeded`` and the ``failurePolicy`` decides
  ("Timeouts", https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#timeouts).
  The default, 6 s, is just above a 5 s timeout; kube-apiserver's default timeout is 10 s.
- ``webhook-error`` — an admission webhook (``role:webhook`` processes only) answers every
  request with an HTTP error [``code``: 500, any of 400..599] and its status text as the
  body (a bad rollout of the webhook, a panicking handler): the API server's call fails with
  ``failed to call webhook: an error on the server ("Internal Server Error") has prevented
  the request from succeeding`` (client-go's ``NewGenericServerResponse`` wording, by code:
  chaoskube/apiserver/webhooks.py ``generic_server_response``), so under ``failurePolicy: Fail``
  the request is refused with 500 ``Internal error occurred: failed calling webhook
  "<name>": ...`` and under ``Ignore`` it is admitted (``validating/dispatcher.go``,
  ``mutating/dispatcher.go``: an ``ErrCallingWebhook`` obeys the failure policy; "Failure
  policy",
  https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#failure-policy).
  Heal: the server answers with its handler again.
- *Webhook unavailability* is ``kill`` on ``role:webhook``: no separate kind. A webhook
  process stands for the webhook Service's whole backend; when every pod behind a
  ClusterIP Service is gone, kube-proxy rejects connections to it (``pkg/proxy/iptables/proxier.go``:
  services without endpoints get a REJECT rule), so the API server's dial is refused at
  once, which is what a killed process gives here (``dial tcp <host>:443: connect:
  connection refused``); the server keeps no state (chaoskube/apiserver/webhooks.py
  ``webhook_server``), so a kill and restart is indistinguishable from stopping and
  starting it. A separate kind would be the same effect under a second name; the nemesis
  offers it by name (``webhook-unavailable``, faults/nemesis.py).
- ``kubelet-stop`` — ``systemctl stop kubelet`` on each target (``role:node`` processes
  only): the kubelet's loops stop (no node status, no lease renewal, no pod sync), while
  the machine stays up: its containers keep running and answering traffic and kube-proxy
  keeps its rules (unlike ``kill`` of a node process, which takes the whole machine off the
  network). The node lifecycle controller then marks the node ``Unknown`` after the
  40 s grace period, taints it ``node.kubernetes.io/unreachable`` and evicts its pods after
  their 300 s toleration ("Node status",
  https://kubernetes.io/docs/reference/node/node-status/; "Taint based Evictions",
  https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions).
  Heal: the kubelet starts again with fresh memory and re-adopts the running containers
  (same ids). The stop is a state: a node process restarted while it is active (a
  ``node-failure`` healed first) comes back with its kubelet still stopped.
- ``drain`` — ``kubectl drain --ignore-daemonsets`` of each target (``role:node``
  processes only), by the system's administrator (:class:`Admin`; only a system with an
  API has one, and planning a drain elsewhere is a FaultError): cordon, then evict every
  pod through the Eviction API, each retried every 5 s while a PodDisruptionBudget answers
  429, as kubectl does (chaoskube/node/kubelet.py ``drain``; "Safely Drain a Node",
  https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/). A voluntary
  disruption: every eviction attempt is journaled as a ``drain`` event, which the
  ``pdb-eviction`` checker counts as voluntary. The drain runs as a task of the world;
  heal stops a drain still under way and uncordons the node (``kubectl uncordon``, retried
  while the API does not answer) once no active drain names it. Non-guarantee: heal
  uncordons even a node that was cordoned before the fault.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import trio

from chaoskube.faults import grudge as grudges
from chaoskube.faults.targets import NODE_SPEC_SELECTORS, ProcessInfo, parse_target, resolve
from chaoskube.sim.network import ANY

if TYPE_CHECKING:
    from chaoskube.sim import World

Params = dict[str, Any]

# kind -> default params (also the list of known kinds and their parameter names)
KINDS: dict[str, Params] = {
    "kill": {},
    "lossy-crash": {},
    "pause": {},
    "isolate": {"scope": "peers"},
    "split": {"leader_in": "minority"},
    "bridge": {},
    "partition": {"spec": "majority"},
    "clock-strobe": {"delta_ms": 200.0, "period_ms": 100.0},
    "clock-jump": {"seconds": 60.0},
    "clock-drift": {"drift": 0.01},
    "link-delay": {"delay_ms": 100.0, "jitter_ms": 0.0},
    "link-loss": {"loss": 0.2},
    "link-duplicate": {"duplicate": 0.2},
    "link-reorder": {"reorder": 0.5, "window_ms": 50.0},
    "slow-disk": {"fsync_ms": 500.0},
    "skip-fsync": {},
    "node-failure": {},
    "zone-outage": {"mode": "power"},
    "control-plane-partition": {"from_roles": "*"},
    "webhook-delay": {"delay_ms": 6000.0},
    "webhook-error": {"code": 500},
    "kubelet-stop": {},
    "drain": {},
}
PARTITIONS = frozenset({"isolate", "split", "bridge", "control-plane-partition", "partition"})
# The Kubernetes control plane's roles ("Control Plane Components",
# https://kubernetes.io/docs/concepts/overview/components/#control-plane-components), as
# chaoskube/cluster.py names its processes' roles.
CONTROL_PLANE_ROLES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
# parameter -> allowed (inclusive) range; numbers not listed must be >= 0
RANGES: dict[str, tuple[float, float]] = {
    "loss": (0.0, 1.0),
    "duplicate": (0.0, 1.0),
    "reorder": (0.0, 1.0),
    "drift": (-0.5, 10.0),  # a clock cannot run backwards; beyond 10x is not a clock
    "seconds": (-1e9, 1e9),
    "code": (400, 599),  # an HTTP error status
    "delta_ms": (0.0, 1e9),
    "period_ms": (1.0, 3_600_000.0),  # Jepsen strobes every 1 ms to 1 s; a flip per 0 ms is no clock
}
CHOICES: dict[str, tuple[str, ...]] = {
    "scope": ("peers", "all"),
    "leader_in": ("minority", "majority", "any"),
    "mode": ("power", "network"),
    "spec": grudges.PARTITION_SPECS,
}
# free-form string parameters: name -> what they must look like (checked by ``validate``)
ROLE_LISTS = frozenset({"from_roles"})


#: The roles chaoskube/cluster.py gives node processes (kubelet and kube-proxy) and
#: admission webhook servers: the kinds meant for them apply to processes of that role only.
NODE_ROLE = "node"
WEBHOOK_ROLE = "webhook"
#: kind -> the role its targets must have (others are left out of the plan, with a note)
TARGET_ROLES: dict[str, str] = {"kubelet-stop": NODE_ROLE, "drain": NODE_ROLE, "webhook-error": WEBHOOK_ROLE}


#: How a plan that does nothing by design starts its note: Jepsen's node and partition specs
#: (``primaries`` with no leader now, ``minority-third`` of three) select nobody at some
#: instants, and Jepsen's nemesis then does nothing; the run journals the skip but does not
#: count it as a fault it failed to apply (:func:`idle_skip`).
NOTHING_TO_DO = "nothing to do:"


def idle_skip(skipped: str) -> bool:
    """Whether a skipped fault (FaultInjector.skipped: ``"KIND TARGET: NOTE"``) did nothing by
    design (:data:`NOTHING_TO_DO`) rather than missing its target."""
    return f": {NOTHING_TO_DO} " in skipped


class FaultError(ValueError):
    """A fault specification that cannot be planned (bad kind, parameter or target)."""


class Admin(Protocol):
    """Administrator actions through the system's own API, for the kinds that are
    requests rather than process or network effects (``drain``). A system that has an API
    provides one in its :class:`Context` (experiments/systems/kubernetes.py:
    ``kubectl`` as cluster-admin); both methods journal what they did and never raise for
    an API error (they are run as tasks of the world, nobody awaits them)."""

    async def drain(self, node: str) -> None:
        """``kubectl drain --ignore-daemonsets NODE``: cordon, then evict through the
        Eviction API, retrying while a PodDisruptionBudget answers 429."""

    async def uncordon(self, node: str) -> None:
        """``kubectl uncordon NODE``, retried while the API does not answer."""


@dataclass(frozen=True)
class Context:
    """What planning may look at: the processes and who leads each role's group; and, when
    the system has one, the administrator that performs API-level faults (``drain``)."""

    processes: Sequence[ProcessInfo]
    leader_of: Callable[[str], str | None]
    admin: Admin | None = None
    #: ``workload:TERMS`` targets: the nodes running the selected workloads' pods (systems
    #: with workloads only).
    workload_nodes: Callable[[str], list[str]] | None = None

    def group(self, role: str | None) -> list[str]:
        return sorted(process.name for process in self.processes if role is None or process.role == role)

    def role_of(self, name: str) -> str | None:
        for process in self.processes:
            if process.name == name:
                return process.role
        return None


@dataclass(frozen=True)
class Plan:
    kind: str
    target: str
    targets: tuple[str, ...]
    params: Params = field(default_factory=dict)
    grudge: dict[str, frozenset[str]] | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "kind": self.kind,
            "target": self.target,
            "targets": list(self.targets),
            "params": dict(sorted(self.params.items())),
        }
        if self.grudge is not None:
            payload["grudge"] = {dst: sorted(sources) for dst, sources in sorted(self.grudge.items())}
        if self.note:
            payload["note"] = self.note
        return payload


def validate(kind: str, params: Params) -> Params:
    """Known kind and parameter names, with defaults filled in."""
    if kind not in KINDS:
        raise FaultError(f"unknown fault kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}")
    defaults = KINDS[kind]
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        allowed = ", ".join(sorted(defaults)) or "none"
        raise FaultError(f"fault {kind!r} has no parameter {unknown[0]!r} (allowed: {allowed})")
    merged = {**defaults, **params}
    for name, value in merged.items():
        if isinstance(defaults[name], int) and not isinstance(defaults[name], bool):
            low, high = RANGES.get(name, (0, math.inf))
            if isinstance(value, bool) or not isinstance(value, int):
                raise FaultError(f"fault {kind!r}: parameter {name!r} must be an integer, not {value!r}")
            if not low <= value <= high:
                raise FaultError(f"fault {kind!r}: parameter {name!r} = {value} is out of range [{low:g}, {high:g}]")
        elif isinstance(defaults[name], float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise FaultError(f"fault {kind!r}: parameter {name!r} must be a finite number, not {value!r}")
            low, high = RANGES.get(name, (0.0, math.inf))
            if not low <= value <= high:
                raise FaultError(f"fault {kind!r}: parameter {name!r} = {value} is out of range [{low:g}, {high:g}]")
        elif name in CHOICES and value not in CHOICES[name]:
            raise FaultError(f"fault {kind!r}: parameter {name!r} must be one of {', '.join(CHOICES[name])}, not {value!r}")
        elif name in ROLE_LISTS and not _role_list_ok(value):
            raise FaultError(f"fault {kind!r}: parameter {name!r} must be \"*\", \"control-plane\" or a comma-separated list of roles, not {value!r}")
    return merged


def _role_list_ok(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    return value in ("*", "control-plane") or all(part.strip() and part.strip() != "*" for part in value.split(","))


def roles_of(value: str) -> tuple[str, ...] | None:
    """The roles a ``from_roles`` parameter names; None for "*" (every role)."""
    if value == "*":
        return None
    if value == "control-plane":
        return CONTROL_PLANE_ROLES
    return tuple(sorted({part.strip() for part in value.split(",")}))


class _NoAdmin:
    """Stands in for a system's :class:`Admin` when a fault is planned before the run."""

    async def drain(self, node: str) -> None:  # pragma: no cover - never run
        raise AssertionError("planning only")

    async def uncordon(self, node: str) -> None:  # pragma: no cover - never run
        raise AssertionError("planning only")


def check_planned(kind: str, target: str, params: Params, processes: Sequence[ProcessInfo], leader_roles: Collection[str], *, admin: bool) -> str | None:
    """Why a fault of ``kind`` on ``target`` could never do anything to ``processes`` (the
    processes a system will run, known before the run), in one line; None when it can.

    Checked before a run (``chaoskube validate``, ``run --dry-run``, every ``run``), so a
    typo in a target (``zone:zone-x``, ``role:etcd-member``, ``name:node-9``), a ``leader:``
    of a role that elects none, or a kind whose targets must have a role the target cannot
    match is refused instead of skipped at run time. ``leader_roles``: the roles whose
    leader the system can name; ``admin``: whether it performs API-level faults (``drain``).
    What is left to the run: whether a leader exists at that instant."""
    selector, argument = parse_target(target)
    if selector == "workload":
        # The nodes of a workload are known only while it runs; whether TERMS select a
        # workload at all is the system's check (KubernetesSystem.workload_target_problem).
        return None
    names = sorted(process.name for process in processes)
    roles = sorted({process.role for process in processes if process.role})
    zones = sorted({process.zone for process in processes if process.zone})
    if selector == "name" and argument not in names:
        return f"no process named {argument!r} in this experiment (processes: {', '.join(names) or 'none'})"
    if selector == "zone" and argument not in zones:
        return f"no zone {argument!r} in this experiment ({'zones: ' + ', '.join(zones) if zones else 'its processes have no zone'})"
    if selector in ("role", "random", "leader", "follower", "minority", "majority", "minority-third", "subset", "primaries") and argument != "*" and argument not in roles:
        return f"no process has role {argument!r} in this experiment (roles: {', '.join(roles) or 'none'})"
    if selector in ("leader", "follower", "primaries") and argument not in leader_roles:
        elected = ", ".join(sorted(leader_roles)) or "none"
        return f"{selector}:{argument} names the {'followers' if selector == 'follower' else 'leader'} of a group, but role {argument!r} elects no leader this system can name (roles with a leader: {elected})"
    size = sum(1 for process in processes if argument == "*" or process.role == argument)
    if selector == "minority-third" and size < 4:
        return f"minority-third:{argument}: fewer than a third of {size} process(es) is nobody (it needs at least 4)"
    if selector == "minority" and size < 2:
        return f"minority:{argument}: a minority of {size} process(es) is nobody (it needs at least 2)"
    if selector == "follower" and sum(1 for process in processes if process.role == argument) < 2:
        return f"follower:{argument}: role {argument!r} has a single process, so never a follower"

    def leader_of(role: str) -> str | None:  # a stand-in: some member, as a leader would be
        group = sorted(process.name for process in processes if process.role == role)
        return group[0] if role in leader_roles and group else None

    context = Context(processes, leader_of, _NoAdmin() if admin else None)
    try:
        planned = plan(kind, target, params, context, random.Random(0))
    except FaultError as error:
        return str(error)
    if not planned.targets:
        return planned.note or f"{target!r} matches no process"
    return None


def plan(kind: str, target: str, params: Params, context: Context, rng: random.Random) -> Plan:
    """Decide what the fault does, now, without touching the world."""
    params = validate(kind, params)
    if kind == "drain" and context.admin is None:
        raise FaultError("fault 'drain' needs a system with an API to evict through (the kubernetes system); this one has none")
    targets = resolve(target, context.processes, rng, context.leader_of, context.workload_nodes)
    if not targets and parse_target(target)[0] in NODE_SPEC_SELECTORS:
        return Plan(kind, target, (), params, note=f"{NOTHING_TO_DO} {target!r} selects nobody now (a Jepsen node spec: the primaries when there is no leader, a minority third of three)")
    if not targets:
        return Plan(kind, target, (), params, note=f"no process matches {target!r} now")
    if kind in TARGET_ROLES:
        role = TARGET_ROLES[kind]
        others = [name for name in targets if context.role_of(name) != role]
        targets = [name for name in targets if context.role_of(name) == role]
        if not targets:
            return Plan(kind, target, (), params, note=f"{kind} applies to processes of role {role!r}; {target!r} matches none now")
        if others:
            return Plan(kind, target, tuple(targets), params, note=f"left out (not of role {role!r}): {others}")
    if kind == "control-plane-partition" or (kind == "zone-outage" and params["mode"] == "network"):
        return _plan_cut_off(kind, target, targets, params, context)
    if kind not in PARTITIONS:
        return Plan(kind, target, tuple(targets), params)
    role = context.role_of(targets[0])
    group = context.group(role)
    if kind == "partition":
        leader = context.leader_of(role) if role else None
        if params["spec"] == "majorities-ring" and len(group) < 3:
            raise FaultError(f"partition majorities-ring needs a group of at least 3 processes; {role!r} has {len(group)}")
        grudge = grudges.partition_spec(params["spec"], group, rng, [leader] if leader is not None else [])
        if not grudge:
            reason = "no leader now" if params["spec"] == "primaries" else f"it cuts nobody in a group of {len(group)}"
            return Plan(kind, target, (), params, note=f"{NOTHING_TO_DO} partition {params['spec']} of {role!r}: {reason}")
        return Plan(kind, target, tuple(sorted(grudge)), params, grudge, note=f"group {group}")
    if kind == "isolate":
        everyone = context.group(None) if params["scope"] == "all" else group
        merged: dict[str, set[str]] = {}
        for node in targets:
            for dst, sources in grudges.isolate(node, everyone).items():
                merged.setdefault(dst, set()).update(sources)
        grudge = {dst: frozenset(sources) for dst, sources in sorted(merged.items())}
        return Plan(kind, target, tuple(targets), params, grudge)
    if kind == "split":
        if len(group) < 3:
            raise FaultError(f"split needs a group of at least 3 processes; {role!r} has {len(group)}")
        leader = context.leader_of(role) if role else None
        where = params["leader_in"]
        minority, majority = grudges.minority_majority(
            group,
            rng,
            include=leader if where == "minority" else None,
            exclude=leader if where == "majority" else None,
        )
        return Plan(kind, target, tuple(minority), params, grudges.complete([minority, majority]), note=f"majority {majority}")
    assert kind == "bridge"
    if len(group) < 3:
        raise FaultError(f"bridge needs a group of at least 3 processes; {role!r} has {len(group)}")
    return Plan(kind, target, (grudges.bridge_node(group),), params, grudges.bridge(group), note="target is the bridge node")


def _plan_cut_off(kind: str, target: str, targets: list[str], params: Params, context: Context) -> Plan:
    """The targets on one side, the other side (every other process, or those of the roles
    ``from_roles`` names) on the other: a complete grudge between the two; processes on
    neither side keep every link."""
    roles = roles_of(params["from_roles"]) if kind == "control-plane-partition" else None
    chosen = set(targets)
    others = [process.name for process in sorted(context.processes, key=lambda process: process.name) if process.name not in chosen and (roles is None or process.role in roles)]
    if not others:
        wanted = "any other process" if roles is None else f"a process of role {', '.join(roles)}"
        return Plan(kind, target, (), params, note=f"nothing to cut {target!r} off from: no {wanted} outside it")
    return Plan(kind, target, tuple(targets), params, grudges.complete([targets, others]), note=f"other side {others}")


# -- applying and healing --------------------------------------------------------------------
#
# Kills are actions: ``apply`` does them and ``heal`` restarts what no other active fault
# keeps down. Every other effect is a state (the grudge, link profiles, pauses, clocks,
# disk settings), recomputed by ``reconcile`` from the plans still active, on top of what
# each resource was before the first fault touched it. So overlapping faults on the same
# processes or links heal correctly in any order, and healing is idempotent.

KILLS = frozenset({"kill", "lossy-crash", "node-failure", "zone-outage"})
LOSSY = frozenset({"lossy-crash", "node-failure", "zone-outage"})  # power cuts: unsynced writes are lost


def kills(plan: Plan) -> bool:
    """Whether ``plan`` kills its targets (a zone outage in "network" mode does not)."""
    return plan.kind in KILLS and not (plan.kind == "zone-outage" and plan.params.get("mode") == "network")
LINK_CHANGES = {
    "link-delay": lambda p: {"delay_s": p["delay_ms"] / 1000.0, "jitter_s": p["jitter_ms"] / 1000.0},
    "link-loss": lambda p: {"loss": p["loss"]},
    "link-duplicate": lambda p: {"duplicate": p["duplicate"]},
    "link-reorder": lambda p: {"reorder": p["reorder"], "reorder_window_s": p["window_ms"] / 1000.0},
    "webhook-delay": lambda p: {"delay_s": p["delay_ms"] / 1000.0},
}
# kinds whose link change is on the links into the targets only (default: both ways)
INBOUND_ONLY = frozenset({"webhook-delay"})


@dataclass
class Baseline:
    """What each resource was before the first fault touched it."""

    links: dict[tuple[str, str], Any] = field(default_factory=dict)  # LinkProfile or None
    disks: dict[str, tuple[float, bool]] = field(default_factory=dict)  # fsync latency, skip
    paused: set[str] = field(default_factory=set)  # processes the faults paused
    clocks: set[str] = field(default_factory=set)  # processes whose clocks the faults set
    kubelets: set[str] = field(default_factory=set)  # node processes whose kubelet the faults stopped
    webhooks: set[str] = field(default_factory=set)  # webhook processes the faults made answer errors
    drains: dict[str, tuple[trio.CancelScope, Admin]] = field(default_factory=dict)  # node -> its drain task
    strobes: dict[str, Strobe] = field(default_factory=dict)  # process -> the clock strobe flipping it


@dataclass
class Strobe:
    """A clock strobe in force on one process: the plan that drives it, whether its delta
    is on now, and the clock the other clock faults give the process (offset, drift)."""

    plan: Plan
    on: bool = False
    offset_s: float = 0.0
    drift: float = 0.0

    @property
    def delta_s(self) -> float:
        return float(self.plan.params["delta_ms"]) / 1000.0 if self.on else 0.0


def _flip(world: World, name: str, strobe: Strobe, baseline: Baseline) -> None:
    """One flip of a strobe, then the next one ``period_ms`` later; stops once reconcile
    has replaced or removed it (the strobe's fault healed)."""
    if baseline.strobes.get(name) is not strobe:
        return
    strobe.on = not strobe.on
    world.process(name).set_clock(strobe.offset_s + strobe.delta_s, strobe.drift)
    world.call_later(float(strobe.plan.params["period_ms"]) / 1000.0, lambda _: _flip(world, name, strobe, baseline))


async def _drain(admin: Admin, node: str, scope: trio.CancelScope) -> None:
    with scope:
        await admin.drain(node)


async def _uncordon(admin: Admin, node: str, drain: trio.CancelScope) -> None:
    drain.cancel()  # ^C on a drain still under way, then uncordon (kubectl uncordon)
    await admin.uncordon(node)


def apply(world: World, plan: Plan) -> None:
    """Do a plan's action now (kill); state effects come from ``reconcile``."""
    if kills(plan):
        for name in plan.targets:
            process = world.process(name)
            if plan.kind in LOSSY:
                lose = process.disk.lose_unsynced_on_crash
                process.disk.lose_unsynced_on_crash = True
                process.kill()
                process.disk.lose_unsynced_on_crash = lose
            else:
                process.kill()


def heal(world: World, plan: Plan, active: Sequence[Plan]) -> None:
    """Undo a plan's action: restart what it killed unless another active fault keeps it
    down. Idempotent."""
    if not kills(plan):
        return
    still_down = {name for other in active if kills(other) for name in other.targets}
    for name in plan.targets:
        process = world.process(name)
        if not process.alive and name not in still_down:
            process.restart()


def reconcile(world: World, active: Sequence[Plan], baseline: Baseline, admin: Admin | None = None) -> None:
    """Make every state effect what the active plans (in the order applied) imply.
    ``admin`` performs the drains that start now (the context's; a drain planned without
    one is refused by ``plan``); the uncordon of a drain that ends uses the admin that
    drained."""
    network = world.network
    # partitions: the union of the active grudges
    grudge: dict[str, set[str]] = {}
    for plan in active:
        for dst, sources in (plan.grudge or {}).items():
            grudge.setdefault(dst, set()).update(sources)
    if {dst: set(sources) for dst, sources in network.grudge.items()} != grudge:
        network.partition(grudge)
    # link profiles: each touched link is its baseline with the active changes on top
    wanted: dict[tuple[str, str], dict[str, Any]] = {}
    for plan in active:
        if plan.kind in LINK_CHANGES:
            for name in plan.targets:
                for key in ((ANY, name),) if plan.kind in INBOUND_ONLY else ((name, ANY), (ANY, name)):
                    if key not in baseline.links:
                        baseline.links[key] = network.link_override(*key)
                    wanted.setdefault(key, {}).update(LINK_CHANGES[plan.kind](plan.params))
    for key, original in sorted(baseline.links.items()):
        if key in wanted:
            network.set_link(*key, (original or network.default).with_(**wanted[key]))
        elif network.link_override(*key) != original:
            network.set_link(*key, original)
    # pauses
    paused = {name for plan in active if plan.kind == "pause" for name in plan.targets}
    for name in sorted(paused | baseline.paused):
        process = world.process(name)
        if name in paused:
            process.pause()
        else:
            process.resume()
    baseline.paused = paused
    # clocks: the sum of the active jumps, the latest active drift
    clocks: dict[str, list[float]] = {}
    for plan in active:
        if plan.kind in ("clock-jump", "clock-drift"):
            for name in plan.targets:
                offset, drift = clocks.get(name, [0.0, 0.0])
                if plan.kind == "clock-jump":
                    offset += float(plan.params["seconds"])
                else:
                    drift = float(plan.params["drift"])
                clocks[name] = [offset, drift]
    # strobes: the latest active strobe of each process flips its clock on top of the above
    strobing: dict[str, Plan] = {}
    for plan in active:
        if plan.kind == "clock-strobe":
            for name in plan.targets:
                strobing[name] = plan
    for name in sorted(set(baseline.strobes) - set(strobing)):
        del baseline.strobes[name]  # its pending flip sees that and stops
    for name, plan in sorted(strobing.items()):
        offset, drift = clocks.get(name, [0.0, 0.0])
        strobe = baseline.strobes.get(name)
        if strobe is None or strobe.plan is not plan:
            strobe = baseline.strobes[name] = Strobe(plan, on=True)  # the first flip is the apply
            world.call_later(float(plan.params["period_ms"]) / 1000.0, lambda _, name=name, strobe=strobe: _flip(world, name, strobe, baseline))
        strobe.offset_s, strobe.drift = offset, drift
        clocks[name] = [offset + strobe.delta_s, drift]
    for name in sorted(set(clocks) | baseline.clocks):
        offset, drift = clocks.get(name, [0.0, 0.0])
        world.process(name).set_clock(offset, drift)
    baseline.clocks = set(clocks)
    # disks: the slowest active fsync; skipped while any skip-fsync is active
    disks: dict[str, list[Any]] = {}
    for plan in active:
        if plan.kind in ("slow-disk", "skip-fsync"):
            for name in plan.targets:
                disk = world.process(name).disk
                original = baseline.disks.setdefault(name, (disk.fsync_latency_s, disk.skip_fsync))
                latency, skip = disks.get(name, list(original))
                if plan.kind == "slow-disk":
                    latency = max(latency, float(plan.params["fsync_ms"]) / 1000.0)
                else:
                    skip = True
                disks[name] = [latency, skip]
    for name, (latency, skip) in sorted(baseline.disks.items()):
        disk = world.process(name).disk
        disk.fsync_latency_s, disk.skip_fsync = disks.get(name, (latency, skip))
    _reconcile_components(world, active, baseline, admin)


def _reconcile_components(world: World, active: Sequence[Plan], baseline: Baseline, admin: Admin | None) -> None:
    """The effects on components inside processes: kubelets off, webhook servers answering
    errors (both kept in the process's memory, so they are set again on a process that
    restarted: a restart is always followed by a reconcile), and drains under way."""
    from chaoskube.apiserver.webhooks import server_fault
    from chaoskube.node.kubelet import kubelet_switch

    # kubelets: off while any kubelet-stop names the node
    stopped = {name for plan in active if plan.kind == "kubelet-stop" for name in plan.targets}
    for name in sorted(stopped | baseline.kubelets):
        process = world.process(name)
        if process.alive:  # a process that is down has no kubelet; its restart reconciles again
            kubelet_switch(process).set_running(name not in stopped)
    baseline.kubelets = stopped
    # webhook servers: the code of the latest active webhook-error, else serving normally
    codes: dict[str, int] = {}
    for plan in active:
        if plan.kind == "webhook-error":
            for name in plan.targets:
                codes[name] = int(plan.params["code"])
    for name in sorted(set(codes) | baseline.webhooks):
        process = world.process(name)
        if process.alive:
            server_fault(process).error_code = codes.get(name)
    baseline.webhooks = set(codes)
    # drains: one drain task per node while any drain names it; uncordon when none does
    drained = {name for plan in active if plan.kind == "drain" for name in plan.targets}
    for name in sorted(drained - set(baseline.drains)):
        assert admin is not None, "a drain is planned only with an admin"
        scope = trio.CancelScope()
        baseline.drains[name] = (scope, admin)
        world.start_soon(_drain, admin, name, scope)
    for name in sorted(set(baseline.drains) - drained):
        scope, drainer = baseline.drains.pop(name)
        world.start_soon(_uncordon, drainer, name, scope)

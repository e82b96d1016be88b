"""One session of an operator test: the user's operator run under ``chaoskube serve``'s live
mode (:func:`chaoskube.experiments.live.run_live`), its CRDs and manifests applied and its
workload driven through the HTTPS front as a client would (the admin's kubeconfig), with at
most one perturbation (:mod:`.plans`) fired by the operator's own requests.

Time is sized to the operator's activity, not to fixed phases: after the manifests and
after each workload step the session waits until the operator is *quiet* -- running, its
watches open on every custom resource since its latest start, no write of its own and no
store change (leases, events and node heartbeats aside) for ``quiet_s`` virtual seconds, and
no write of the cluster's own controllers in flight (one that a failing etcd holds, then
times out and retries, is work still to come), no Pod that a kubelet is starting or
stopping -- bounded by ``step_timeout_s`` (a step that
never quiets is recorded as not converged).
Then the run is stopped (heal, recovery, checks) at once.

The session's record is the run directory (journal.jsonl, result.json, reports) and
``session.json``: the steps with their times, the perturbation's times, whether each wait
converged, and the wall time spent in each part.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
import yaml

from chaoskube.experiments.operator_testing.plans import MUTATING, STALE_RESTART_S, Plan, write_kind
from chaoskube.experiments.operator_testing.workload import Step

__all__ = ["SessionOptions", "SessionRecord", "Target", "run_session"]

OPERATOR = "operator"
#: Store changes that do not count against quiescence: heartbeats (nodes, leader-election
#: leases, the API servers' master leases every 10 s) and records.
QUIET_IGNORED = ("/registry/leases/", "/registry/events/", "/registry/nodes/", "/registry/endpointslices/", "/registry/endpoints/", "/masterleases/")
#: The same, as the resources of API calls: a write of these in flight does not hold a step.
QUIET_IGNORED_RESOURCES = frozenset(("leases", "events", "nodes", "endpointslices", "endpoints"))
PODS_PREFIX = "/registry/pods/"
#: The front's clients (the operator, the driver's user): real HTTP requests, whose end an
#: API server killed under them does not journal; the operator's activity is its calls and
#: its CPU, the user's writes are the steps themselves.
FRONT_CLIENTS = frozenset((OPERATOR, "outside"))
POLL_S = 0.1  # wall seconds between two looks at the journal
#: A poll that finds the operator's threads running or waiting for a CPU for at least this
#: share of the time since the previous poll counts as its activity: no quiet spell ends
#: while it computes or -- on a machine busier than the plans at a time assumed -- waits
#: for a CPU to react with (it has been handed an event the journal shows long before).
#: An idle kopf or Go controller uses well under 1 % between polls.
OPERATOR_BUSY = 0.2
#: Wall seconds between two reads of the operator's CPU time from /proc (a read of every
#: /proc/PID/stat costs a few milliseconds): an operator killed at a crash loses at most this
#: much of its count.
CPU_SAMPLE_S = 1.0
#: A Pod being scheduled and started (created, no phase reported yet) or stopped (deleted
#: gracefully, still in the store) holds the quiet spell, as a cluster write in flight does:
#: the binding, the kubelet's status write or final delete, and the reactions to them, are
#: still to come (after an API server's kill the scheduler may bind it only seconds later,
#: once its informers are back).
#: The kubelet pulls the image and starts the containers 2-3 s after the binding (a Go
#: controller's Deployment step was otherwise a 3 s pause, and its plans' quiet spell 4 s);
#: a Pod that does not start or stop within POD_HOLD_S virtual seconds (an image that cannot
#: be pulled, a node gone) holds it no longer. After an API server's kill a kubelet's calls to
#: it hang until their timeout, and a Pod bound then started 13 s later (go/record_after_create
#: _fixed, apiserver-kill@update:foos...status#16): 30 s, within the 40 s bound of a step.
POD_HOLD_S = 30.0
#: Plan kinds after which a step waits for the learned writes only writes_wait_s.
LEARNED_WAIT_KINDS = ("crash", "lost-response")
MAX_PAUSES = 200  # pauses_after_writes_s kept per step (the operator's first 200 writes in it)
#: The quiet spell before the first step: the operator has just started watching and has
#: nothing of the workload to act on yet.
READY_QUIET_S = 0.5
#: After an unobserved state ends, the operator has missed the echo of its own last write
#: and may wait for it before acting on what it lists (kopf waits up to
#: ``settings.persistence.consistency_timeout``, 5 s): no quiet spell ends sooner than this
#: (wall seconds) after the end.
UNOBSERVED_SETTLE_S = 6.0
#: How long the operator may take to watch its custom resources once their CRDs are
#: Established before it is started again (virtual seconds).
CRD_PICKUP_S = 8.0


@dataclass(frozen=True)
class Target:
    """What the user gave: the operator's command, its manifests (CRDs first) and workload."""

    command: str
    manifests: tuple[dict[str, Any], ...]
    steps: tuple[Step, ...]
    cwd: str = ""

    @property
    def crds(self) -> list[dict[str, Any]]:
        return [doc for doc in self.manifests if doc.get("kind") == "CustomResourceDefinition"]

    @property
    def custom_resources(self) -> dict[str, tuple[str, str, str, bool]]:
        """kind -> (group, version, plural, namespaced)."""
        out = {}
        for crd in self.crds:
            spec = crd["spec"]
            versions = [v for v in spec.get("versions", []) if v.get("served", True)]
            version = next((v for v in versions if v.get("storage")), versions[0])
            out[spec["names"]["kind"]] = (spec["group"], version["name"], spec["names"]["plural"], spec.get("scope", "Namespaced") == "Namespaced")
        return out


@dataclass(frozen=True)
class SessionOptions:
    seed: int = 1
    speed: float = 1.0  # virtual seconds per wall second (World.go_live's rate)
    quiet_s: float = 2.0
    step_timeout_s: float = 40.0
    ready_timeout_s: float = 40.0
    checkers: tuple[str, ...] = ("steady-state", "api-linearizability", "garbage-collection")
    #: Per checkpoint (ready, then each step): the kinds of write (``write_kind``; Events,
    #: leases and the like aside, as for quiescence) the operator made in that step in both
    #: learning runs. A session waits, up to step_timeout_s, until the operator has made a
    #: write of each of them before taking a quiet spell as the end of the step: a slow or
    #: restarted operator is not judged before it acted. Kinds, not a number: how many status
    #: updates and Event patches a controller makes varies from run to run (the
    #: sample-controller's first step: 12, 14 and 16 writes in three fault-free runs, the
    #: same four kinds), and a learned number that a plan's run fell short of held its step
    #: to the 40 s bound.
    expected_writes: tuple[tuple[str, ...], ...] = ()
    #: Learned from the fault-free runs (run.learn; 0: not learned). The quiet spell that
    #: ends a step while no perturbation has fired yet (the operator acts as it did in the
    #: learning runs, whose longest pause within a step bounds it); ``quiet_s`` from the
    #: perturbation on.
    quiet_learned_s: float = 0.0
    #: How long a step waits for the learned writes once the operator is ready again and
    #: the perturbation healed (virtual seconds; 0: ``step_timeout_s``). An operator that
    #: will not make them (it found less to do after a restart) is judged after this.
    writes_wait_s: float = 0.0
    #: The learned virtual length of the boot (up to the front opening): virtual time 0 is
    #: put that long before the run starts (LiveOptions.epoch_lead_s, divided by ``speed``),
    #: so the front opens without waiting for the wall clock to catch up with the boot.
    epoch_lead_s: float = 0.0


@dataclass
class SessionRecord:
    out: Path
    plan: dict[str, Any] | None
    steps: list[dict[str, Any]] = field(default_factory=list)
    perturbation: dict[str, Any] = field(default_factory=dict)
    converged: bool = True
    wall: dict[str, float] = field(default_factory=dict)
    error: str = ""
    verdicts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan, "steps": self.steps, "perturbation": self.perturbation, "converged": self.converged, "wall": self.wall, "error": self.error, "verdicts": self.verdicts}


# ----------------------------------------------------------------------------- the client
class _Client:
    """The admin's HTTPS client of the front (what kubectl would send)."""

    def __init__(self, kubeconfig: Path, directory: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        user = next(entry["user"] for entry in config["users"] if entry["name"] == "admin")
        cluster = config["clusters"][0]["cluster"]
        files = {}
        for name, data in (("ca.pem", cluster["certificate-authority-data"]), ("admin.pem", user["client-certificate-data"]), ("admin-key.pem", user["client-key-data"])):
            path = directory / name
            path.write_bytes(base64.b64decode(data))
            files[name] = str(path)
        import ssl

        context = ssl.create_default_context(cafile=files["ca.pem"])
        context.load_cert_chain(files["admin.pem"], files["admin-key.pem"])
        self.http = httpx.Client(base_url=cluster["server"], verify=context, timeout=10.0)

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> httpx.Response:
        for attempt in range(5):  # a client retries a refused connection (an API server kill)
            try:
                return self.http.request(method, path, content=json.dumps(body).encode() if body is not None else None, headers={"Content-Type": content_type})
            except httpx.TransportError:
                if attempt == 4:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.http.close()


def _path(doc: dict[str, Any], kinds: dict[str, tuple[str, str, str, bool]], *, name: str = "", namespace: str = "") -> str:
    """The collection path (or the object's, with ``name``) of a manifest's kind."""
    from chaoskube.api.objects import KINDS

    kind = doc["kind"]
    if kind in kinds:
        group, version, plural, namespaced = kinds[kind]
        base = f"/apis/{group}/{version}"
    else:
        info = KINDS[kind]
        group_version = doc.get("apiVersion", "v1")
        base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        plural, namespaced = info.resource, info.namespaced
    namespace = namespace or (doc.get("metadata") or {}).get("namespace") or "default"
    path = f"{base}/namespaces/{namespace}/{plural}" if namespaced else f"{base}/{plural}"
    return f"{path}/{name}" if name else path


# ----------------------------------------------------------------------------- the session
def run_session(target: Target, out: Path, plan: Plan | None = None, options: SessionOptions = SessionOptions()) -> SessionRecord:
    """Run the operator once (see the module docstring); returns the session's record and
    writes it to ``out/session.json``."""
    from chaoskube.experiments.live import FOREVER_S, LiveOptions, default_experiment, run_live
    from chaoskube.experiments.model import Phases
    from chaoskube.experiments.registry import SYSTEMS

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = SessionRecord(out, plan.to_json() if plan is not None else None)
    experiment = msgspec.structs.replace(
        default_experiment(), name="test-operator", title="An operator test session", description="The user's operator under one perturbation (chaoskube test-operator).",
        source="chaoskube test-operator", checkers=list(options.checkers),
        phases=Phases(setup_s=60.0, warmup_s=0.0, faults_s=FOREVER_S, recovery_s=30.0, settle_s=0.0),
    )
    started = time.perf_counter()
    cpu = os.times()
    waited = _runqueue_wait_s()
    children = _Descendants()
    threads: list[threading.Thread] = []

    def ready(handle: Any) -> None:  # in the run's Trio thread
        record.wall["boot_s"] = round(time.perf_counter() - started, 3)
        # Where the boot ended in virtual time (the world went live there): the next
        # session's epoch_lead_s.
        record.wall["boot_virtual_s"] = next((round(event["t"], 3) for event in reversed(handle.world.journal.events) if event.get("type") == "world" and event.get("event") == "live"), 0.0)
        _arm(handle, plan, record, {f"{plural}.{group}" for group, _, plural, _ in target.custom_resources.values()})
        thread = threading.Thread(target=_drive, args=(handle, target, options, record, children), name="test-operator-driver", daemon=True)
        threads.append(thread)
        thread.start()

    live_options = LiveOptions(port=0, run=target.command, rate=options.speed, on_ready=ready, epoch_lead_s=options.epoch_lead_s / options.speed)
    result = run_live(experiment, SYSTEMS["kubernetes"], options.seed, out, live_options)
    for thread in threads:
        thread.join(timeout=30)
    record.wall["total_s"] = round(time.perf_counter() - started, 3)
    record.wall["stop_s"] = round(record.wall["total_s"] - record.wall.get("boot_s", 0.0) - record.wall.get("driven_s", 0.0), 3)
    children.sample()  # whatever is still alive (usually nothing: the operator is reaped)
    record.wall.update(_cpu_since(cpu, waited, children))
    record.verdicts = {name: {"valid": verdict.valid, "reason": verdict.reason} for name, verdict in result.verdicts.items()}
    (out / "session.json").write_text(json.dumps(record.to_json(), indent=1, sort_keys=True))
    return record


def _runqueue_wait_s() -> float:
    """Seconds this process's main thread (the run's Trio thread: the simulated cluster) has
    spent runnable but waiting for a CPU (/proc/self/schedstat's second field, in ns; 0
    where the kernel does not say)."""
    try:
        return int(Path("/proc/self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _cpu_since(before: os.times_result, waited: float, children: _Descendants) -> dict[str, float]:
    """The CPU the session used since ``before``: its own (the simulated cluster, the HTTPS
    front, the driver) and its descendants' (the operator, every run of it), and how long
    the cluster's thread waited for a CPU -- what sizes --jobs (run.choose_jobs) and says
    whether the plan ran starved."""
    now = os.times()
    return {"cpu_s": round(now.user - before.user + now.system - before.system, 3), "operator_cpu_s": round(children.cpu_s(), 3),
            "runqueue_wait_s": round(max(0.0, _runqueue_wait_s() - waited), 3), "operator_runqueue_wait_s": round(children.waited_s(), 3)}


class _Descendants:
    """The CPU time of this process's descendants (the operator, its shell, the guard), read
    from /proc at each :meth:`sample`: the operator is SIGKILLed at a crash and at the end,
    often after its shell, so the kernel never adds its time to ours (os.times's children
    fields miss it). Its time after the last sample (the end of the last step) is not
    counted. Empty where there is no /proc."""

    TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int], int] = {}  # (pid, start time) -> utime + stime, in ticks
        self.waited: dict[tuple[int, int], int] = {}  # (pid, start time) -> its main thread's runqueue wait, in ns
        self.pids: set[int] = set()  # the descendants at the last sample
        self.busy_ns = 0  # busy() at its last call: the descendants' threads' CPU and runqueue wait, in ns
        self.busy_at = 0.0

    def sample(self) -> None:
        parents: dict[int, tuple[int, int, int]] = {}
        try:
            names = os.listdir("/proc")
        except OSError:
            return
        for name in names:
            if not name.isdigit():
                continue
            try:
                text = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2:].split()  # after the command's name, which may hold spaces
            # fields[1]: ppid; [11], [12]: utime, stime; [19]: start time (proc(5): fields 4, 14, 15, 22)
            parents[int(name)] = (int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19]))
        mine = {os.getpid()}
        changed = True  # a child's pid may be lower than its parent's: until nothing is added
        while changed:
            changed = False
            for pid, (ppid, _, _) in parents.items():
                if ppid in mine and pid not in mine:
                    mine.add(pid)
                    changed = True
        self.pids = mine - {os.getpid()}
        for pid in self.pids:
            _, ticks, start = parents[pid]
            self.seen[(pid, start)] = max(self.seen.get((pid, start), 0), ticks)
            try:  # its main thread's wait for a CPU (an asyncio operator's loop), in ns
                waited = int(Path(f"/proc/{pid}/schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
            self.waited[(pid, start)] = max(self.waited.get((pid, start), 0), waited)

    def cpu_s(self) -> float:
        return sum(self.seen.values()) * self.TICK_S

    def busy(self) -> float:
        """The share of a CPU the descendants (the operator) have been running or waiting to
        run since the last call: every thread's run time and runqueue wait
        (/proc/PID/task/TID/schedstat), per wall second. 0 at the first call, or where the
        kernel does not say."""
        total = 0
        for pid in self.pids:
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    ran, waited = Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[:2]
                except (OSError, ValueError):
                    continue
                total += int(ran) + int(waited)
        now = time.perf_counter()
        share = max(0, total - self.busy_ns) / 1e9 / (now - self.busy_at) if self.busy_at and now > self.busy_at else 0.0
        self.busy_ns, self.busy_at = total, now
        return share

    def waited_s(self) -> float:
        return sum(self.waited.values()) / 1e9


# ----------------------------------------------------------------------------- perturbations
def _arm(handle: Any, plan: Plan | None, record: SessionRecord, custom: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """Install the plan's trigger (in the run's Trio thread): count the operator's answered
    requests matching the plan's point; at the Nth, perturb. ``custom``: the custom
    resources' store names (an unobserved state ends at the user's next change of one)."""
    if plan is None:
        return
    world, front = handle.world, handle.front
    host = handle._host  # noqa: SLF001 - the injector of this run
    point = plan.point
    seen = {"count": 0}

    mark = _marker(world, record)

    if plan.kind in ("stale-state", "unobserved-state"):
        _arm_view(handle, plan, record, mark, custom)
        return

    if plan.kind == "lost-response":
        def lose(client: str, request: Any, response: Any) -> bool:
            if client != OPERATOR or not response.ok or not point.matches(request.verb, request.resource, request.subresource):
                return False
            seen["count"] += 1
            if seen["count"] != point.nth:
                return False
            mark("applied")
            mark("healed")
            front.lose_response = None
            return True

        front.lose_response = lose
        return

    def act(_: Any) -> None:
        mark("applied")
        if plan.kind == "crash":
            world.process(OPERATOR).kill()
            world.call_later(plan.duration_s, lambda _: (world.process(OPERATOR).restart(), mark("healed")))
            return
        injector = host.injector
        assert injector is not None, "the fault phase has begun before the workload"
        kind, target, params = {
            "apiserver-kill": ("kill", "name:" + handle.front.api_servers[0], {}),
            "etcd-leader-kill": ("kill", "leader:etcd", {}),
            "partition": ("control-plane-partition", f"name:{OPERATOR}", {"from_roles": "kube-apiserver"}),
        }[plan.kind]
        active = injector.inject(kind, target, params)
        if active is None:
            mark("skipped")
            return
        world.call_later(plan.duration_s, lambda _: (injector.heal(active), mark("healed")))

    client = "outside" if point.user else OPERATOR

    def hook(event: dict[str, Any]) -> None:
        if event.get("client") != client or event.get("phase") != "ok" or not point.matches(str(event.get("verb")), str(event.get("resource")), str(event.get("subresource") or "")):
            return
        seen["count"] += 1
        if seen["count"] == point.nth:
            remove()
            if plan.kind == "crash" and not point.user:
                _kill_program_now(world)
            world.call_later(0.0, act)

    remove = world.on_record("api-op", hook)


def _kill_program_now(world: Any) -> None:
    """SIGKILL the operator's program at once, from the hook that saw its write answered,
    before the answer leaves the front: a crash *right after* the write (Sieve's intermediate
    state) must not let the operator act on the answer first. Cancelling the simulated
    process only kills the program at the run's next scheduling step, 10-20 ms later on a
    busy machine, by when an operator has made its next write (record_after_create's crash
    plan missed its window so). The simulated process is killed by the action scheduled
    after, as before; this only sends the signal sooner (it changes nothing in the world)."""
    process = world.processes.get(OPERATOR)
    program = process.memory.get("program") if process is not None else None
    if program is not None:
        program.kill_group()


def _marker(world: Any, record: SessionRecord) -> Callable[[str], None]:
    """Note a perturbation's event (applied, healed...) in the record and the journal."""
    def mark(event: str) -> None:
        record.perturbation[event] = round(world.now, 6)
        world.record("test-operator", event=event, plan=(record.plan or {}).get("id", ""))

    return mark


def _arm_view(handle: Any, plan: Plan, record: SessionRecord, mark: Callable[[str], None], custom: set[str]) -> None:
    """stale-state and unobserved-state (see :mod:`.plans`): the operator's view is
    perturbed from just *before* the point's request commits -- at the invoke of the
    request that will be the Nth matching one answered -- so the state the request makes
    is the first the operator does not see. A request that fails instead undoes it."""
    world, front = handle.world, handle.front
    point = plan.point
    client = "outside" if point.user else OPERATOR
    stale = plan.kind == "stale-state"
    lagging = front.api_servers[1] if len(front.api_servers) > 1 else None
    state: dict[str, Any] = {"count": 0, "armed": None, "fired": False, "done": False}

    def cacher() -> Any:
        return handle.system.handle.api_servers[lagging].cacher

    def begin() -> None:
        if stale:
            cacher().stall()
            if point.user:
                # The user's change: the operator dies before it commits (deterministically
                # never seeing it), and comes back against the replica that did not see it.
                world.process(OPERATOR).kill()
        else:
            front.withhold(OPERATOR)

    def undo() -> None:
        if stale:
            cacher().resume()
            if point.user:
                world.process(OPERATOR).restart()
        else:
            front.end_withholding(OPERATOR)

    def fire(_: Any) -> None:
        if stale:
            record.perturbation["server"] = lagging
            record.perturbation["stale_revision"] = cacher().resource_version
            mark("applied")
            if not point.user:
                world.process(OPERATOR).kill()  # right after its own write
            _point_operator_at(handle, lagging)
            world.call_later(STALE_RESTART_S, lambda _: (world.process(OPERATOR).restart(), mark("restarted")))

            def heal(_: Any) -> None:
                cacher().resume()
                state["done"] = True
                mark("healed")

            world.call_later(plan.duration_s, heal)
        else:
            mark("withholding")

    def hook(event: dict[str, Any]) -> None:
        if state["done"]:
            return
        phase = event.get("phase")
        if state["fired"]:
            if stale:
                return
            # unobserved-state: the user's next change of a custom resource has committed:
            # the operator's watches end, and it lists again.
            if event.get("client") == "outside" and phase == "ok" and event.get("verb") in MUTATING and event.get("resource") in custom:
                state["done"] = True
                world.call_later(0.0, lambda _: end_unobserved(handle, record, mark))
            return
        if event.get("client") != client or not point.matches(str(event.get("verb")), str(event.get("resource")), str(event.get("subresource") or "")):
            return
        if phase == "invoke":
            if state["armed"] is None and state["count"] == point.nth - 1:
                state["armed"] = event.get("op_id")
                begin()
            return
        if phase == "ok":
            state["count"] += 1
            if state["count"] == point.nth:
                if state["armed"] is None:  # it was not ours to see begin (cannot happen in order)
                    begin()
                state["fired"] = True
                if stale and not point.user:
                    _kill_program_now(world)  # fire's kill, right after its own write
                world.call_later(0.0, fire)
        elif event.get("op_id") == state["armed"]:
            state["armed"] = None
            undo()

    if stale and lagging is None:
        mark("skipped")  # one API server: no replica to lag
        return
    world.on_record("api-op", hook)


def end_unobserved(handle: Any, record: SessionRecord, mark: Callable[[str], None]) -> None:
    """End an unobserved state (in the run's Trio thread): the operator's watches end,
    resuming them is answered 410, it lists again."""
    record.perturbation["withheld_up_to"] = handle.front.end_withholding(OPERATOR)
    mark("applied")
    mark("healed")


def _point_operator_at(handle: Any, server: str) -> None:
    """The operator's kubeconfig's current context moves to ``server``'s listener: the
    next start of the operator talks to that replica."""
    url = dict(handle.front.urls)[server]
    path = Path(handle.operator_kubeconfig)
    config = yaml.safe_load(path.read_text())
    cluster = next(entry["name"] for entry in config["clusters"] if entry["cluster"]["server"] == url)
    config["current-context"] = next(entry["name"] for entry in config["contexts"] if entry["context"]["cluster"] == cluster)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


# ----------------------------------------------------------------------------- the driver
class _Watcher:
    """Reads the run's journal from the driver thread (through the run's Trio thread)."""

    def __init__(self, handle: Any, plurals: set[str], speed: float = 1.0) -> None:
        self.handle = handle
        self.speed = speed
        self.plurals = plurals
        self.index = 0
        self.last_activity = 0.0
        self.now = 0.0
        self.operator_started = 0.0
        #: The resources the operator watched since its latest start, each through the API
        #: server of its latest watch; and those whose watch an API server's kill or an
        #: error event ended, not watched again yet.
        self.watch_servers: dict[str, str] = {}
        self.watches_lost: set[str] = set()
        self.watch_resources: dict[str, str] = {}  # the operator's watch (journal id) -> its resource
        self.operator_running = False
        #: made[i]: the kind of the operator's (i+1)th successful write ("" for the kinds
        #: quiescence ignores)
        self.made: list[str] = []
        self.perturbed = False  # a perturbation is in force (applied, not yet healed)
        self.longest_pause = 0.0  # the longest time between two activities since reset_pause()
        #: [k]: the longest pause that began once the operator had made k writes since
        #: reset_pause() (run.learn_tuning reads [1]: the pauses after its first write)
        self.pauses_after_writes: list[float] = []
        self.writes_base = 0
        self.healed_at = 0.0  # when the operator was last ready with no perturbation in force
        self.withholding = False  # an unobserved state is in force (events withheld)
        #: After an unobserved state the operator legitimately does less than it learned:
        #: the writes learned no longer bound the waits.
        self.relaxed = False
        self.settle_until = 0.0  # no quiet spell ends before (after an unobserved state)
        #: The most the cluster's clock trailed the wall clock at a poll since take_lag()
        #: (virtual seconds): a starved process (too many --jobs for the CPUs) runs late.
        self.lag_s = 0.0
        self.children: _Descendants | None = None  # sampled every CPU_SAMPLE_S (run_session's)
        self.sampled_at = 0.0
        self.busy_polls = 0  # polls that found the operator busy (OPERATOR_BUSY) since take_lag()
        #: The cluster's own writes in flight, (client, op id): no quiet spell while
        #: one is. A controller's write held by a failing etcd (its store change still to come,
        #: or a timeout and a retry) is work the step has not finished; a killed process's
        #: calls end with it.
        self.writes_in_flight: set[tuple[str, Any]] = set()
        #: Pods being started or stopped ("namespace/name" -> when the hold lapses), and
        #: when the last hold ended: time held is not a pause, and no quiet spell counts
        #: from before it (POD_HOLD_S).
        self.pods_held: dict[str, float] = {}
        self.held_until = 0.0
        self.holds_lapsed = 0  # holds that ran out (POD_HOLD_S) rather than ended
        self.pods_gone: set[str] = set()  # removed from the store (an immediate delete ends before its call)

    def take_lag(self) -> float:
        lag, self.lag_s = self.lag_s, 0.0
        return lag

    def _active(self, t: float) -> None:
        pause = 0.0 if self.pods_held else max(0.0, t - max(self.last_activity, self.held_until))
        self.longest_pause = max(self.longest_pause, pause)
        made = self.writes - self.writes_base
        self.pauses_after_writes += [0.0] * (made + 1 - len(self.pauses_after_writes))
        for index in range(made + 1):
            self.pauses_after_writes[index] = max(self.pauses_after_writes[index], pause)
        self.last_activity = t

    def reset_pause(self, now: float) -> None:
        self.longest_pause = 0.0
        self.pauses_after_writes = []
        self.writes_base = self.writes
        self.last_activity = max(self.last_activity, now)

    def poll(self) -> None:
        world = self.handle.world

        def read() -> tuple[list[dict[str, Any]], float, bool, float]:
            world.catch_up()
            process = world.processes.get(OPERATOR)
            # How far the cluster's clock trails the wall clock: an event (or a timer) due
            # and not yet run because the process did not get a CPU in time.
            pacer = getattr(world, "pacer", None)  # None: not live
            lag = (pacer.allowed() - world.now) if pacer is not None else 0.0
            return world.journal.events[self.index:], world.now, bool(process is not None and process.running and process.memory.get("pid")), lag

        events, self.now, self.operator_running, lag = self.handle.call(read)
        if self.children is not None and time.perf_counter() - self.sampled_at >= CPU_SAMPLE_S:
            self.sampled_at = time.perf_counter()
            self.children.sample()
        self.lag_s = max(self.lag_s, lag)
        self.index += len(events)
        for event in events:
            kind = event.get("type")
            if kind == "operator" and event.get("event") == "start":
                self.operator_started = event["t"]
                self.watch_servers = {}
                self.watches_lost = set()
                self.last_activity = event["t"]
            elif kind == "http-request" and event.get("client") == OPERATOR:
                if event.get("verb") == "watch" and event.get("code") == 200:
                    resource = str(event.get("resource", ""))
                    self.watch_servers[resource] = str(event.get("server", ""))
                    self.watches_lost.discard(resource)
            elif kind == "watch-open" and event.get("client") == OPERATOR:
                self.watch_resources[str(event.get("watch", ""))] = str(event.get("resource", "")).split(".")[0]
            elif kind == "watch-recv" and any(change[0] == "ERROR" for change in event.get("events") or ()):
                # A watch of the operator's ended by an error (410 Expired: the restarted API
                # server's cache holds no history before its re-list): the reflector lists
                # and watches that resource again, after its back-off.
                resource = self.watch_resources.get(str(event.get("watch", "")))
                if resource is not None:
                    self.watches_lost.add(resource)
            elif kind == "api-op":
                self._api_op(event)
            elif kind == "process" and event.get("event") in ("kill", "exit"):
                gone = event.get("process", "")
                self.writes_in_flight = {key for key in self.writes_in_flight if key[0] != gone and not key[0].startswith(gone + "/")}
            elif kind == "raft-apply" and event.get("events"):
                for change in event["events"]:
                    if str(change[1]).startswith(PODS_PREFIX):
                        pod = str(change[1])[len(PODS_PREFIX):]
                        if change[0] == "DELETE":
                            self.pods_gone.add(pod)
                            self._release(pod, event["t"])
                        else:
                            self.pods_gone.discard(pod)
                if any(not str(change[1]).startswith(QUIET_IGNORED) for change in event["events"]):
                    self._active(event["t"])
            elif kind == "scheduled":
                self._hold(str(event.get("pod", "")), event["t"])
            elif kind in ("pod-phase", "pod-deleted"):
                self._release(str(event.get("pod", "")), event["t"])
            elif kind in ("test-operator", "fault"):
                self._active(event["t"])
                if kind == "fault" and event.get("event") == "apply" and event.get("kind") == "kill":
                    # The operator's watches through a killed API server are broken: it is
                    # not ready until it watches each of those resources again (client-go's
                    # reflector after its back-off; a step that ended before missed the
                    # controller's reaction to what changed meanwhile).
                    killed = set(event.get("targets") or ())
                    self.watches_lost |= {resource for resource, server in self.watch_servers.items() if server in killed}
                if kind == "test-operator" and event.get("event") == "applied":
                    self.perturbed = True
                elif kind == "test-operator" and event.get("event") in ("healed", "skipped"):
                    self.perturbed = False
                    if self.withholding:
                        self.settle_until = event["t"] + UNOBSERVED_SETTLE_S * self.speed
                    self.withholding = False
                elif kind == "test-operator" and event.get("event") == "withholding":
                    self.withholding = self.relaxed = True
        for pod, lapses in list(self.pods_held.items()):
            if lapses <= self.now:
                del self.pods_held[pod]
                self.held_until = max(self.held_until, lapses)
                self.holds_lapsed += 1
        if self.children is not None and self.children.busy() >= OPERATOR_BUSY:
            # Running, or runnable and waiting for a CPU: not quiet, whatever the journal
            # says (a starved operator is still reacting).
            self.busy_polls += 1
            self._active(self.now)
        if self.perturbed or not self.ready():
            self.healed_at = self.now

    def _api_op(self, event: dict[str, Any]) -> None:
        """An API call's begin or end: the operator's are its activity (and its writes
        counted); a write of the cluster's own (but for the resources whose changes are
        ignored) is tracked while in flight, and its begin and end are activity."""
        client = str(event.get("client", ""))
        write = client not in FRONT_CLIENTS and event.get("verb") in MUTATING and event.get("resource") not in QUIET_IGNORED_RESOURCES
        if client == OPERATOR or write:
            self._active(event["t"])
        if client == OPERATOR and event.get("phase") == "ok" and event.get("verb") in MUTATING:
            counted = event.get("resource") not in QUIET_IGNORED_RESOURCES
            self.made.append(write_kind(str(event["verb"]), str(event.get("resource", "")), str(event.get("subresource") or "")) if counted else "")
        if event.get("resource") == "pods" and event.get("phase") == "ok" and not event.get("subresource"):
            pod = f"{event.get('namespace', '')}/{event.get('name', '')}"
            # created: to be scheduled, then started; deleted gracefully (still in the
            # store): the kubelet stops it first
            if event.get("verb") == "create" or (event.get("verb") == "delete" and pod not in self.pods_gone):
                self._hold(pod, event["t"])
        if write:
            key = (client, event.get("op_id"))
            if event.get("phase") == "invoke":
                self.writes_in_flight.add(key)
            else:
                self.writes_in_flight.discard(key)

    def _hold(self, pod: str, t: float) -> None:
        if not self.pods_held:
            self._active(t)  # the pause before the hold is a pause; none while it lasts
        self.pods_held[pod] = t + POD_HOLD_S  # the kubelet works in virtual time, whatever the speed

    def _release(self, pod: str, t: float) -> None:
        if self.pods_held.pop(pod, None) is not None:
            self.held_until = max(self.held_until, t)

    @property
    def writes(self) -> int:
        """The operator's successful writes so far."""
        return len(self.made)

    @property
    def watching(self) -> set[str]:
        """The resources the operator watches now."""
        return set(self.watch_servers) - self.watches_lost

    def ready(self) -> bool:
        return self.operator_running and self.watching >= self.plurals and not self.watches_lost

    def made_since(self, base: int) -> set[str]:
        """The kinds of the operator's writes after its first ``base`` ones."""
        return set(self.made[base:]) - {""}

    def quiet(self, quiet_s: float, since: float, expected: Collection[str] = (), base: int = 0) -> bool:
        """Ready, no perturbation in force, no write in flight, a write of each ``expected``
        kind made since its first ``base`` writes, and nothing done for ``quiet_s``."""
        return (self.ready() and not self.perturbed and not self.writes_in_flight and not self.pods_held and (self.relaxed or not set(expected) - self.made_since(base))
                and self.now >= self.settle_until and self.now - max(self.last_activity, self.held_until, since) >= quiet_s)


def _wait(watcher: _Watcher, condition: Callable[[], bool], timeout_s: float) -> bool:
    """Poll until ``condition()`` or ``timeout_s`` of virtual time."""
    watcher.poll()
    deadline = watcher.now + timeout_s
    while True:
        watcher.poll()
        if condition():
            return True
        if watcher.now >= deadline:
            return False
        time.sleep(POLL_S)


def _drive(handle: Any, target: Target, options: SessionOptions, record: SessionRecord, children: _Descendants | None = None) -> None:
    kinds = target.custom_resources
    watcher = _Watcher(handle, {plural for _, _, plural, _ in kinds.values()}, options.speed)
    watcher.children = children
    wall = time.perf_counter()
    client = None
    try:
        with tempfile.TemporaryDirectory() as directory:
            client = _Client(handle.kubeconfig, Path(directory))
            if not _wait(watcher, lambda: handle.call(lambda: handle._host.phase) == "faults", options.ready_timeout_s):  # noqa: SLF001
                raise RuntimeError("the run never reached its fault phase")
            _apply_manifests(client, target, kinds, watcher, options)
            if not _wait(watcher, watcher.ready, CRD_PICKUP_S):
                # The operator started before its CRDs existed and has not picked them up
                # (kopf can miss a CRD created while it starts: "Unresolved resources cannot
                # be served"); start it again, as a user does after installing the CRDs.
                handle.call(lambda: (handle.world.record("test-operator", event="restart-after-crds"), handle.world.process(OPERATOR).restart()))
            if not _wait(watcher, watcher.ready, options.ready_timeout_s):
                raise RuntimeError(f"the operator never watched {', '.join(sorted(watcher.plurals - watcher.watching))} within {options.ready_timeout_s:g} s (is it running? see operator-output in the journal)")
            record.wall["ready_s"] = round(time.perf_counter() - wall, 3)
            _quiesce(watcher, options, record, "ready", 0, 0, quiet_s=min(options.quiet_s, READY_QUIET_S))
            for index, step in enumerate(target.steps):
                watcher.poll()
                base = watcher.writes
                _do(client, step, kinds, watcher, record)
                if step.action == "wait":
                    _wait(watcher, lambda: False, step.seconds)
                _quiesce(watcher, options, record, step.describe(), index + 1, base)
            if "withholding" in record.perturbation and "applied" not in record.perturbation:
                # an unobserved state with no later change of the workload: it ends here
                handle.call(lambda: end_unobserved(handle, record, _marker(handle.world, record)))
                _quiesce(watcher, options, record, "after the perturbation healed", -1, watcher.writes)
            # A perturbation still in force (or its restart still to come): wait it out. (A
            # step's quiet spell already waits for the heal: this is for one fired later.)
            if record.plan is not None and "applied" in record.perturbation and not ("healed" in record.perturbation or "skipped" in record.perturbation):
                _wait(watcher, lambda: "healed" in record.perturbation or "skipped" in record.perturbation, options.step_timeout_s)
                watcher.poll()
                _quiesce(watcher, options, record, "after the perturbation healed", -1, watcher.writes)
    except Exception as error:  # noqa: BLE001 - recorded, and the run stopped
        record.error = f"{type(error).__name__}: {error}"[:500]
    finally:
        if client is not None:
            client.close()
        record.wall["driven_s"] = round(time.perf_counter() - wall, 3)
        if children is not None:
            children.sample()  # the operator's time up to the end (it is killed at the stop)
        with contextlib.suppress(Exception):
            handle.stop()


def _quiesce(watcher: _Watcher, options: SessionOptions, record: SessionRecord, label: str, index: int, watcher_base: int, *, quiet_s: float | None = None) -> None:
    """Wait for the end of a step: quiet after the writes the learning runs saw (if the
    operator makes fewer -- the perturbation changed what it does -- the quiet spell alone
    ends the step, once ``writes_wait_s`` has passed since it was ready again and healed).
    The quiet spell is the learned one until a perturbation fires, ``quiet_s`` after."""
    watcher.poll()
    since = watcher.now
    begun = time.perf_counter()
    watcher.reset_pause(since)
    expected = frozenset(options.expected_writes[index]) if 0 <= index < len(options.expected_writes) else frozenset()
    record.steps.append({"step": label, "t_start": round(since, 6), "writes_before": watcher_base})
    entry = record.steps[-1]

    def quiet() -> float:
        if quiet_s is not None:
            return quiet_s
        if not options.quiet_learned_s:
            return options.quiet_s
        # Never shorter than a pause the learning runs saw (a Pod starting, a retry's
        # back-off); shorter than quiet_s only until the perturbation fires.
        return options.quiet_learned_s if "applied" not in record.perturbation else max(options.quiet_s, options.quiet_learned_s)

    # The learned bound only where the operator finds out at once what happened to it (it
    # restarted; its connection closed): cut off or served by a dead replica, its requests
    # hang until its own timeout (kopf's request_timeout), which no fault-free run shows.
    writes_wait = options.writes_wait_s if options.writes_wait_s and (record.plan or {}).get("kind") in LEARNED_WAIT_KINDS else options.step_timeout_s

    def done_or_given_up() -> bool:
        if watcher.quiet(quiet(), since, expected, watcher_base):
            return True
        return bool(expected) and watcher.now - max(since, watcher.healed_at) >= writes_wait

    got = _wait(watcher, done_or_given_up, options.step_timeout_s)
    if got and not watcher.quiet(quiet(), since, expected, watcher_base):
        got = _wait(watcher, lambda: watcher.quiet(quiet(), since), options.step_timeout_s)
        entry["fewer_writes_than_learned"] = True
    elif not got and expected:
        got = _wait(watcher, lambda: watcher.quiet(quiet(), since), options.step_timeout_s)
        entry["fewer_writes_than_learned"] = True
    # The longest pause between two of the operator's activities before its last one (what
    # sizes a plan's quiet spell): the final quiet spell itself is not a pause.
    entry.update(t_end=round(watcher.now, 6), converged=got, writes=watcher.writes - watcher_base, kinds=sorted(watcher.made_since(watcher_base)), longest_pause_s=round(watcher.longest_pause, 3),
                 pauses_after_writes_s=[round(pause, 3) for pause in watcher.pauses_after_writes[:MAX_PAUSES]], wall_s=round(time.perf_counter() - begun, 3),
                 max_lag_s=round(watcher.take_lag(), 3), quiet_s=quiet(), busy_polls=watcher.busy_polls, pod_holds_lapsed=watcher.holds_lapsed)
    watcher.busy_polls = watcher.holds_lapsed = 0
    if index != 0:  # the lag while getting ready is the boot's run past its learned length (harmless: nothing of the workload yet)
        record.wall["max_lag_s"] = max(record.wall.get("max_lag_s", 0.0), entry["max_lag_s"])
    if watcher.withholding:
        entry["withheld"] = True  # the operator could not see this step's state: not judged
    if not got:
        record.converged = False


def _apply_manifests(client: _Client, target: Target, kinds: dict[str, tuple[str, str, str, bool]], watcher: _Watcher, options: SessionOptions) -> None:
    for doc in target.crds:
        _check(client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doc), f"create CRD {doc['metadata']['name']}")
    for doc in target.crds:
        name = doc["metadata"]["name"]

        def established(name: str = name) -> bool:
            answer = client.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conditions = (answer.json().get("status") or {}).get("conditions") or [] if answer.status_code == 200 else []
            return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

        if not _wait(watcher, established, options.ready_timeout_s):
            raise RuntimeError(f"CRD {name} never became Established")
    for doc in target.manifests:
        if doc.get("kind") == "CustomResourceDefinition":
            continue
        answer = client.request("POST", _path(doc, kinds), doc)
        if answer.status_code != 409:
            _check(answer, f"create {doc.get('kind')} {(doc.get('metadata') or {}).get('name')}")


def _do(client: _Client, step: Step, kinds: dict[str, tuple[str, str, str, bool]], watcher: _Watcher, record: SessionRecord) -> None:
    watcher.poll()
    entry = {"step": step.describe(), "t": round(watcher.now, 6)}
    if step.action == "create":
        answer = client.request("POST", _path(step.body, kinds, namespace=step.namespace), step.body)
    elif step.action == "update":
        answer = client.request("PATCH", _path({"kind": step.kind}, kinds, name=step.name, namespace=step.namespace), step.body, "application/merge-patch+json")
    elif step.action == "delete":
        answer = client.request("DELETE", _path({"kind": step.kind}, kinds, name=step.name, namespace=step.namespace))
    else:
        record.steps.append(entry | {"code": 0})
        return
    entry["code"] = answer.status_code
    handle_record = watcher.handle
    handle_record.call(lambda: handle_record.world.record("test-operator", event="step", step=step.describe(), code=answer.status_code))
    record.steps.append(entry)
    _check(answer, step.describe())


def _check(answer: httpx.Response, what: str) -> None:
    if answer.status_code >= 300:
        raise RuntimeError(f"{what}: HTTP {answer.status_code}: {answer.text[:200]}")

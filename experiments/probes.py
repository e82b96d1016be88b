"""User-defined probes and a steady-state hypothesis in experiment files.

An experiment file may declare ``probes`` (Litmus's probes) and a ``steady_state``
hypothesis (Chaos Toolkit's steady-state hypothesis); a system that can run them says so
(``System.PROBES``: the ``kubernetes`` system). Each probe asks one question of the
running cluster, as a user of it would:

- ``http``: a request to a Service, through the kube-proxy rule table of the first running
  node (as a client on that node sees the Service), from the process ``probes`` (no zone:
  it stays out of every fault domain, as the ``traffic`` observer does). Its value is the
  outcome: ``ok`` (a pod answered), ``no-endpoints`` (kube-proxy has no endpoint: the
  iptables REJECT rule of a Service without endpoints, ``pkg/proxy/iptables/proxier.go``),
  ``refused`` or ``timeout``; with ``max_latency_s`` an ``ok`` slower than that is
  ``slow``. Default tolerance: ``ok``.
- ``object``: one object read through the API (``kubectl get``): a ``field`` (a dotted
  path of the object's JSON, camelCase, ``[N]`` for list items:
  ``status.readyReplicas``, ``spec.template.spec.containers[0].image``,
  ``status.conditions[type=Ready].status`` for the first list item with that field), a ``condition``
  (the ``status`` of the condition of that type: ``Available`` -> ``"True"``), or neither
  (the value is whether the object exists). A missing object or field has the value
  ``null``. Default tolerance: the field is set; the condition is ``"True"``; the object
  exists.
- ``count``: the number of objects of a resource (``kubectl get pods -l app=web
  --field-selector status.phase=Running``): ``selector`` (a label selector),
  ``field_selector`` (as the API server takes it), ``where`` (dotted field -> value, all
  must match), in ``namespace`` ("" for every namespace). Default tolerance: at least 1.

A ``tolerance`` (Chaos Toolkit's word; its probes' tolerances are a value, a range or a
regex, https://chaostoolkit.org/reference/api/experiment/#tolerance) is any of ``equals``,
``one_of``, ``min``, ``max`` (numbers, inclusive), ``regex`` (the whole value, as a
string); every one given must hold. An API error, or an ``http`` request that fails, is a
failed evaluation, never a pass.

Modes (Litmus's, https://docs.litmuschaos.io/docs/concepts/probes#probe-modes; the same
words): ``SOT`` — once at the start of the fault phase, before the first fault is
injected; ``EOT`` — once at the end of the test, after recovery and settling, before the
workload stops; ``Edge`` — both (the default); ``Continuous`` — every ``interval_s`` from
when the workload starts until it stops (faults and recovery included); ``OnChaos`` —
every ``interval_s`` strictly during the fault phase (from its start to the heal). Run
properties, as Litmus's ``runProperties``: ``attempts`` (an evaluation passes if any
attempt passes; ``attempt``), ``retry_s`` between attempts (``interval``), ``timeout_s``
per attempt (``probeTimeout``), ``initial_delay_s`` before the first poll of a
Continuous/OnChaos probe (``initialDelay``).

Each probe is judged as a checker named ``probe:<name>`` (added to the experiment's
checkers when it loads), a pure function of the journal: every evaluation is journaled as
``{"type": "user-probe", "probe", "at", "ok", "value", "reason", "attempts"}`` and the
checker answers false when one evaluation its mode requires failed (the evidence: the
failing evaluations), unknown when the run ended before its mode's evaluations ran, else
true (the details count them).

The steady-state hypothesis (``steady_state: {title, probes: [...]}``, probes without a
``mode``) joins the system's own steady state: it must hold at the start of the fault
phase (evaluated with the SOT probes) and return after heal within the recovery deadline
(the recovery wait probes the system's steady state and the hypothesis together), as
Chaos Toolkit checks its hypothesis before and after the method. Its evaluations are
journaled with ``at: "steady-state"`` and fold into the ``steady-state`` checker.

Non-guarantees: a probe sees the cluster as a client does (the API server's watch cache,
kube-proxy's last rules), not the store; probes cost virtual time (each API read takes
the client's round trip) and so shift the journal of a run that has them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from chaoskube.checkers.verdict import Verdict

__all__ = [
    "MODES",
    "PROBE_EVENT",
    "CountCheck",
    "HttpCheck",
    "ObjectCheck",
    "Probe",
    "SteadyStateHypothesis",
    "Tolerance",
    "checker_name",
    "judge_hypothesis_before",
    "judge_probe",
    "probe_problems",
    "resolve_path",
    "within",
]

Mode = Literal["SOT", "EOT", "Edge", "Continuous", "OnChaos"]
MODES: tuple[str, ...] = ("SOT", "EOT", "Edge", "Continuous", "OnChaos")
PROBE_EVENT = "user-probe"
CHECKER_PREFIX = "probe:"
HYPOTHESIS_AT = "steady-state"
#: The largest number of failing evaluations kept as a verdict's evidence.
MAX_EVIDENCE = 20
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS label, as Kubernetes names things
_INDEX = r"\[(\d+|[A-Za-z_][A-Za-z0-9_-]*=[^\]]*)\]"  # [N], or [key=value]: the first item whose key is value
_PATH = re.compile(rf"^[A-Za-z_][A-Za-z0-9_-]*({_INDEX})*(\.[A-Za-z_][A-Za-z0-9_-]*({_INDEX})*)*$")
Scalar = str | int | float | bool


def _finite(value: float, low: float, high: float) -> bool:
    return math.isfinite(value) and low <= value <= high


class HttpCheck(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    service: str  # "namespace/name", or "name" in the default namespace
    port: int | str = 80  # the Service port: its number or its name
    max_latency_s: float | None = None

    def __post_init__(self) -> None:
        if not self.service or self.service.count("/") > 1:
            raise ValueError("`service` is NAME or NAMESPACE/NAME")
        if self.max_latency_s is not None and not _finite(self.max_latency_s, 0.0, 3600.0):
            raise ValueError(f"`max_latency_s` must be a finite number between 0 and 3600, got {self.max_latency_s}")

    @property
    def key(self) -> str:
        return self.service if "/" in self.service else f"default/{self.service}"


class ObjectCheck(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    resource: str  # the plural resource name, as in `kubectl get deployments`
    name: str
    namespace: str = "default"  # ignored for cluster-scoped resources (nodes)
    field: str = ""
    condition: str = ""

    def __post_init__(self) -> None:
        if self.field and self.condition:
            raise ValueError("give `field` or `condition`, not both")
        if self.field and not _PATH.match(self.field):
            raise ValueError(f"`field` {self.field!r} is not a dotted path like status.readyReplicas or spec.containers[0].image")


class CountCheck(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    resource: str
    namespace: str = ""  # "": every namespace
    selector: str = ""  # a label selector, as `kubectl get -l`
    field_selector: str = ""  # as `kubectl get --field-selector`
    where: dict[str, Scalar] = {}  # dotted field -> value, every one must match

    def __post_init__(self) -> None:
        for path in self.where:
            if not _PATH.match(path):
                raise ValueError(f"`where` key {path!r} is not a dotted path like status.phase")


class Tolerance(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    equals: Scalar | None = None
    one_of: list[Scalar] | None = None
    min: float | None = None
    max: float | None = None
    regex: str | None = None

    def __post_init__(self) -> None:
        for name, bound in (("min", self.min), ("max", self.max)):
            if bound is not None and not math.isfinite(bound):
                raise ValueError(f"`{name}` must be a finite number, got {bound}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"`min` ({self.min:g}) is above `max` ({self.max:g})")
        if self.one_of is not None and not self.one_of:
            raise ValueError("`one_of` lists at least one value")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as error:
                raise ValueError(f"`regex` {self.regex!r} does not compile: {error}") from None

    @property
    def empty(self) -> bool:
        return self.equals is None and self.one_of is None and self.min is None and self.max is None and self.regex is None


class Probe(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    name: str
    http: HttpCheck | None = None
    object: ObjectCheck | None = None
    count: CountCheck | None = None
    tolerance: Tolerance = Tolerance()
    mode: Mode | None = None  # `probes`: default Edge; `steady_state.probes`: none
    interval_s: float = 1.0  # Continuous / OnChaos polling (Litmus probePollingInterval)
    attempts: int = 1  # Litmus attempt
    retry_s: float = 1.0  # between attempts (Litmus interval)
    timeout_s: float = 2.0  # per attempt (Litmus probeTimeout)
    initial_delay_s: float = 0.0  # before the first poll (Litmus initialDelay)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"`name` {self.name!r} must be a DNS label: lower-case letters, digits and '-', at most 63")
        given = [kind for kind, value in (("http", self.http), ("object", self.object), ("count", self.count)) if value is not None]
        if len(given) != 1:
            raise ValueError(f"a probe is one of `http`, `object`, `count`; this one has {', '.join(given) or 'none'}")
        for name, value, low, high in (("interval_s", self.interval_s, 0.01, 3600.0), ("retry_s", self.retry_s, 0.0, 3600.0), ("timeout_s", self.timeout_s, 0.01, 3600.0), ("initial_delay_s", self.initial_delay_s, 0.0, 3600.0)):
            if not _finite(value, low, high):
                raise ValueError(f"`{name}` must be a finite number between {low:g} and {high:g}, got {value}")
        if not 1 <= self.attempts <= 100:
            raise ValueError(f"`attempts` must be between 1 and 100, got {self.attempts}")

    @property
    def kind(self) -> str:
        return "http" if self.http is not None else "object" if self.object is not None else "count"

    @property
    def effective_mode(self) -> str:
        return self.mode or "Edge"

    def tolerance_text(self) -> str:
        parts = []
        tolerance = self.effective_tolerance()
        if tolerance.equals is not None:
            parts.append(f"== {tolerance.equals!r}")
        if tolerance.one_of is not None:
            parts.append(f"one of {tolerance.one_of!r}")
        if tolerance.min is not None:
            parts.append(f">= {tolerance.min:g}")
        if tolerance.max is not None:
            parts.append(f"<= {tolerance.max:g}")
        if tolerance.regex is not None:
            parts.append(f"matches {tolerance.regex!r}")
        return " and ".join(parts) or "set"

    def effective_tolerance(self) -> Tolerance:
        """The tolerance given, or the kind's default (module docstring)."""
        if not self.tolerance.empty:
            return self.tolerance
        if self.http is not None:
            return Tolerance(equals="ok")
        if self.count is not None:
            return Tolerance(min=1)
        assert self.object is not None
        if self.object.condition:
            return Tolerance(equals="True")
        if not self.object.field:
            return Tolerance(equals=True)
        return Tolerance()  # the field is set (not null)


class SteadyStateHypothesis(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    title: str
    probes: list[Probe]

    def __post_init__(self) -> None:
        if not self.probes:
            raise ValueError("a steady-state hypothesis has at least one probe")
        for probe in self.probes:
            if probe.mode is not None:
                raise ValueError(f"probe {probe.name!r}: a steady-state probe has no `mode` (it runs before the faults and after heal); modes belong to `probes`")


def checker_name(probe: Probe) -> str:
    return f"{CHECKER_PREFIX}{probe.name}"


def probe_problems(probes: Sequence[Probe], hypothesis: SteadyStateHypothesis | None, resources: dict[str, bool], parse_selectors: Callable[[str, str, str], str | None]) -> list[str]:
    """What is wrong with the probes of an experiment, each as ``field `...`: reason``:
    duplicate names, unknown resources (``resources``: plural name -> namespaced), bad
    selectors (``parse_selectors(resource, labels, fields)`` answers a problem or None)."""
    problems = []
    seen: set[str] = set()
    entries = [(f"probes[{index}]", probe) for index, probe in enumerate(probes)]
    entries += [(f"steady_state.probes[{index}]", probe) for index, probe in enumerate(hypothesis.probes if hypothesis else ())]
    for where, probe in entries:
        if probe.name in seen:
            problems.append(f"field `{where}.name`: {probe.name!r} names two probes; each name once")
        seen.add(probe.name)
        check = probe.object or probe.count
        if check is not None and check.resource not in resources:
            problems.append(f"field `{where}.{probe.kind}.resource`: unknown resource {check.resource!r}; known: {', '.join(sorted(resources))}")
            continue
        if probe.count is not None:
            problem = parse_selectors(probe.count.resource, probe.count.selector, probe.count.field_selector)
            if problem:
                problems.append(f"field `{where}.count`: {problem}")
    return problems


# =========================================================================== values
_MISSING = object()


def resolve_path(document: Any, path: str) -> Any:
    """The value at ``path`` in a JSON document, or None when absent: ``a.b[0].c`` (a list
    item by index) or ``status.conditions[type=Ready].status`` (the first item whose field
    has that value, as kubectl's JSONPath filters ``[?(@.type=="Ready")]``)."""
    value = document
    for part in _split_path(path):
        name, _, rest = part.partition("[")
        value = value.get(name, None) if isinstance(value, dict) else None
        for selector in re.findall(r"\[([^\]]*)\]", "[" + rest) if rest else ():
            if not isinstance(value, list):
                return None
            if selector.isdigit():
                value = value[int(selector)] if int(selector) < len(value) else None
            else:
                key, _, wanted = selector.partition("=")
                value = next((item for item in value if isinstance(item, dict) and _text(item.get(key)) == wanted), None)
        if value is None:
            return None
    return value


def _split_path(path: str) -> list[str]:
    """``a.b[k=v.w].c`` -> ``["a", "b[k=v.w]", "c"]``: dots inside brackets stay."""
    parts, depth, current = [], 0, ""
    for char in path:
        if char == "." and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current += char
    parts.append(current)
    return parts


def within(value: Any, tolerance: Tolerance) -> tuple[bool, str]:
    """Whether ``value`` meets ``tolerance``, and if not, why (one line)."""
    if tolerance.empty:
        return (value is not None, "" if value is not None else "not set")
    if tolerance.equals is not None and not _equal(value, tolerance.equals):
        return False, f"{value!r} is not {tolerance.equals!r}"
    if tolerance.one_of is not None and not any(_equal(value, item) for item in tolerance.one_of):
        return False, f"{value!r} is not one of {tolerance.one_of!r}"
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if (tolerance.min is not None or tolerance.max is not None) and not numeric:
        return False, f"{value!r} is not a number"
    if tolerance.min is not None and value < tolerance.min:
        return False, f"{value!r} is below {tolerance.min:g}"
    if tolerance.max is not None and value > tolerance.max:
        return False, f"{value!r} is above {tolerance.max:g}"
    if tolerance.regex is not None and (value is None or re.fullmatch(tolerance.regex, _text(value)) is None):
        return False, f"{value!r} does not match {tolerance.regex!r}"
    return True, ""


def _equal(value: Any, expected: Any) -> bool:
    if isinstance(value, bool) or isinstance(expected, bool):
        return value is expected
    if isinstance(value, (int, float)) and isinstance(expected, (int, float)):
        return value == expected
    return bool(value == expected)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# =========================================================================== judging
def _phase_times(events: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {event["name"]: event["t"] for event in events if event["type"] == "phase"}


def judge_probe(probe: Probe, events: Sequence[dict[str, Any]]) -> Verdict:
    """The ``probe:<name>`` checker (module docstring): a pure function of the journal."""
    mine = [event for event in events if event["type"] == PROBE_EVENT and event.get("probe") == probe.name]
    mode = probe.effective_mode
    wanted = {"SOT": ("SOT",), "EOT": ("EOT",), "Edge": ("SOT", "EOT"), "Continuous": ("continuous",), "OnChaos": ("onchaos",)}[mode]
    phases = _phase_times(events)
    missing = [at for at in wanted if not any(event["at"] == at for event in mine)]
    failing = [event for event in mine if event["at"] in wanted and not event["ok"]]
    counted = [event for event in mine if event["at"] in wanted]
    details = {"mode": mode, "evaluations": len(counted), "failed": len(failing), "tolerance": probe.tolerance_text()}
    if failing:
        first = failing[0]
        return Verdict(False, f"{mode} probe {probe.name!r} failed {len(failing)} of {len(counted)} evaluation(s); first at {first['t']:.3f} s ({first['at']}): {first['reason']}", tuple(failing[:MAX_EVIDENCE]), details)
    if missing:
        reached = "the fault phase" if "faults" in phases else "the workload"
        return Verdict(None, f"{mode} probe {probe.name!r} was never evaluated at {', '.join(missing)} (the run ended before {reached} or the probe's window)", details=details)
    return Verdict(True, f"{mode} probe {probe.name!r} held in all {len(counted)} evaluation(s) ({probe.kind}, {probe.tolerance_text()})", details=details)


def judge_hypothesis_before(hypothesis: SteadyStateHypothesis, events: Sequence[dict[str, Any]]) -> Verdict:
    """Whether the hypothesis held at the start of the fault phase (its first evaluation
    there, journaled before the faults' first event)."""
    phases = _phase_times(events)
    start = phases.get("faults")
    if start is None:
        return Verdict(None, f"steady-state hypothesis {hypothesis.title!r}: the run ended before the fault phase")
    names = [probe.name for probe in hypothesis.probes]
    before = [event for event in events if event["type"] == PROBE_EVENT and event["at"] == HYPOTHESIS_AT and event["t"] >= start and event.get("before")]
    failing = [event for event in before if not event["ok"]]
    if failing:
        return Verdict(False, f"steady-state hypothesis {hypothesis.title!r} did not hold before the faults: {failing[0]['probe']}: {failing[0]['reason']}", tuple(failing))
    if {event["probe"] for event in before} != set(names):
        return Verdict(None, f"steady-state hypothesis {hypothesis.title!r} was not evaluated before the faults")
    return Verdict(True, f"steady-state hypothesis {hypothesis.title!r} held before the faults")


# =========================================================================== running
@dataclass(frozen=True)
class Evaluation:
    ok: bool
    value: Any
    reason: str
    attempts: int


class ProbeAccess:
    """What probes need from a system (the kubernetes system builds one): the world, a
    process to act from, an API client of it, and the kube-proxy rule table a client on a
    node sees (``rule(service, port)``)."""

    def __init__(self, world: Any, process: Any, client: Any, proxy: Any) -> None:
        self.world = world
        self.process = process
        self.client = client
        self.proxy = proxy


class ProbeRunner:
    """Evaluates an experiment's probes and hypothesis in a run (module docstring, modes).

    The host calls :meth:`at_fault_phase` (SOT probes and the hypothesis, before the first
    fault), :meth:`start_polling` / :meth:`stop_polling` (Continuous probes, from the
    workload's start to its end; OnChaos ones during the fault phase), :meth:`hypothesis`
    (each recovery probe after heal) and :meth:`at_end` (EOT probes). Every evaluation is
    journaled; nothing here judges (judge_probe does, from the journal)."""

    def __init__(self, access: ProbeAccess, probes: Sequence[Probe], hypothesis: SteadyStateHypothesis | None) -> None:
        self.access = access
        self.probes = list(probes)
        self.steady = hypothesis
        self._pollers: dict[str, Any] = {}

    # -- what the host calls ----------------------------------------------------------------
    async def at_fault_phase(self) -> None:
        if self.steady is not None:
            await self._evaluate_all(self.steady.probes, HYPOTHESIS_AT, before=True)
        await self._evaluate_all([probe for probe in self.probes if probe.effective_mode in ("SOT", "Edge")], "SOT")

    async def at_end(self) -> None:
        await self._evaluate_all([probe for probe in self.probes if probe.effective_mode in ("EOT", "Edge")], "EOT")

    async def hypothesis(self) -> Verdict:
        """The hypothesis now: every probe within its tolerance."""
        if self.steady is None:
            return Verdict(True, "no steady-state hypothesis")
        failed = []
        for probe in self.steady.probes:
            evaluation = await self._evaluate(probe, HYPOTHESIS_AT)
            if not evaluation.ok:
                failed.append(f"{probe.name}: {evaluation.reason}")
        if failed:
            return Verdict(False, f"steady-state hypothesis {self.steady.title!r} does not hold: {'; '.join(failed)}", tuple(failed))
        return Verdict(True, f"steady-state hypothesis {self.steady.title!r} holds")

    def start_polling(self, mode: str) -> None:
        """Poll the probes of ``mode`` (Continuous or OnChaos) until :meth:`stop_polling`."""
        import trio

        for probe in self.probes:
            if probe.effective_mode != mode:
                continue
            scope = trio.CancelScope()
            self._pollers[probe.name] = scope
            self.access.world.start_soon(self._poll, probe, scope)

    def stop_polling(self, mode: str) -> None:
        for probe in self.probes:
            scope = self._pollers.pop(probe.name, None) if probe.effective_mode == mode else None
            if scope is not None:
                scope.cancel()

    # -- evaluation ---------------------------------------------------------------------------
    async def _poll(self, probe: Probe, scope: Any) -> None:
        at = "continuous" if probe.effective_mode == "Continuous" else "onchaos"
        with scope:
            await self.access.world.sleep(probe.initial_delay_s)
            while True:
                started = self.access.world.now
                await self._evaluate(probe, at)
                await self.access.world.sleep(max(0.0, started + probe.interval_s - self.access.world.now))

    async def _evaluate_all(self, probes: Sequence[Probe], at: str, *, before: bool = False) -> None:
        for probe in probes:
            await self._evaluate(probe, at, before=before)

    async def _evaluate(self, probe: Probe, at: str, *, before: bool = False) -> Evaluation:
        world = self.access.world
        evaluation = Evaluation(False, None, "not evaluated", 0)
        for attempt in range(1, probe.attempts + 1):
            value, problem = None, "no answer within timeout_s"
            with self.access.process.move_on_after(probe.timeout_s):
                value, problem = await self._measure(probe)
            if problem:
                evaluation = Evaluation(False, value, problem, attempt)
            else:
                ok, why = within(value, probe.effective_tolerance())
                evaluation = Evaluation(ok, value, why or f"{value!r} is within {probe.tolerance_text()}", attempt)
            if evaluation.ok:
                break
            if attempt < probe.attempts:
                await world.sleep(probe.retry_s)
        fields = {"probe": probe.name, "at": at, "ok": evaluation.ok, "value": _journal_value(evaluation.value), "reason": evaluation.reason, "attempts": evaluation.attempts}
        if before:
            fields["before"] = True
        world.record(PROBE_EVENT, **fields)
        return evaluation

    async def _measure(self, probe: Probe) -> tuple[Any, str]:
        """(value, problem): problem is "" when the value was measured."""
        from chaoskube.client.client import ApiError

        try:
            if probe.http is not None:
                return await self._http(probe.http, probe.timeout_s)
            if probe.object is not None:
                return await self._object(probe.object)
            assert probe.count is not None
            return await self._count(probe.count)
        except ApiError as error:
            return None, f"the API did not answer: {error}"

    async def _http(self, check: HttpCheck, timeout_s: float) -> tuple[Any, str]:
        from chaoskube.node.proxy import TRAFFIC_PORT, TrafficRequest, pick_endpoint
        from chaoskube.sim import Failed, Ok

        process = self.access.process
        started = process.now()
        rule = self.access.proxy.rule(check.key, check.port)
        if rule is None or not rule.endpoints:
            return "no-endpoints", ""
        endpoint = pick_endpoint(rule.endpoints, process.random(f"probes/{check.key}/{check.port}").random)
        if not endpoint.node:
            await process.sleep(timeout_s)
            return "timeout", ""
        outcome = await process.call(endpoint.node, TrafficRequest(pod_ip=endpoint.ip, port=endpoint.port, service=check.key), port=TRAFFIC_PORT, timeout_s=timeout_s)
        if isinstance(outcome, Ok):
            latency = process.now() - started
            if check.max_latency_s is not None and latency > check.max_latency_s:
                return "slow", ""
            return "ok", ""
        return ("refused" if isinstance(outcome, Failed) else "timeout"), ""

    async def _object(self, check: ObjectCheck) -> tuple[Any, str]:
        from chaoskube.api.manifests import to_dict
        from chaoskube.api.objects import KINDS
        from chaoskube.client.client import ApiError

        namespaced = next((info.namespaced for info in KINDS.values() if info.resource == check.resource), True)
        try:
            obj = await self.access.client.get(check.resource, check.namespace if namespaced else "", check.name)
        except ApiError as error:
            if error.code == 404:
                return (False if not (check.field or check.condition) else None), ""
            raise
        document = to_dict(obj)
        if check.condition:
            conditions = resolve_path(document, "status.conditions") or []
            found = next((item for item in conditions if isinstance(item, dict) and item.get("type") == check.condition), None)
            return (found.get("status") if found else None), ""
        if check.field:
            return resolve_path(document, check.field), ""
        return True, ""

    async def _count(self, check: CountCheck) -> tuple[Any, str]:
        from chaoskube.api.manifests import to_dict

        listed = await self.access.client.list(check.resource, check.namespace, label_selector=check.selector, field_selector=check.field_selector)
        count = 0
        for obj in listed.items:
            if check.where:
                document = to_dict(obj)
                if not all(_equal(resolve_path(document, path), value) for path, value in check.where.items()):
                    continue
            count += 1
        return count, ""


def _journal_value(value: Any) -> Any:
    """A JSON value for the journal (a probe's value is a JSON value already, or a
    structure read from an object: kept as it is when small, else summarized)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    text = repr(value)
    return value if len(text) <= 200 else text[:197] + "..."

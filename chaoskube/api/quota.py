"""Resource quotas and limit ranges as pure functions: what an object uses, what a quota
admits, what a LimitRange defaults and forbids.

Upstream sources (kubernetes/kubernetes):

- ``pkg/quota/v1/evaluator/core/pods.go`` — a pod's usage: ``pods``, ``count/pods``,
  ``requests.*`` / bare names and ``limits.*`` of cpu, memory, ephemeral-storage and
  extended resources (``requests.nvidia.com/gpu``); a terminal pod uses nothing; scopes
  Terminating / NotTerminating (``activeDeadlineSeconds``), BestEffort / NotBestEffort,
  PriorityClass (``scopeSelector``);
- ``pkg/quota/v1/evaluator/core/services.go``, ``persistent_volume_claims.go`` and the
  generic object-count evaluator (``count/<resource>.<group>``);
- ``plugin/pkg/admission/resourcequota/controller.go`` — :func:`check_quota`: every quota of
  the namespace that matches the object and constrains something it uses must have that
  resource in ``status.hard`` (else "status unknown for quota"), and ``used + requested``
  must stay within ``hard`` (else ``exceeded quota: <name>, requested: ..., used: ...,
  limited: ...``); a quota on a compute resource the pod does not state is refused
  (``failed quota: <name>: must specify ...``);
- ``plugin/pkg/admission/limitranger/admission.go`` — :func:`limit_range_defaults` (the
  container defaults LimitRanger writes, with its ``kubernetes.io/limit-ranger`` annotation)
  and :func:`limit_range_problems` (min, max, maxLimitRequestRatio per Container, Pod and
  PersistentVolumeClaim, in upstream's words).

Quantities are compared in milli-units (:func:`chaoskube.api.objects.parse_quantity`) and
printed as written or as upstream formats a computed sum (``format_milli``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chaoskube.api.objects import (
    KINDS,
    Container,
    CustomObject,
    LimitRange,
    Object,
    PersistentVolumeClaim,
    Pod,
    ResourceQuota,
    Service,
    format_milli,
    parse_quantity,
)

__all__ = [
    "LIMIT_RANGER_ANNOTATION",
    "check_quota",
    "limit_range_defaults",
    "limit_range_problems",
    "quota_matches",
    "usage",
]

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_STANDARD_PREFIXES = ("kubernetes.io/", "requests.", "limits.")


def _qualified(resource: str, obj: Object) -> str:
    """``count/<resource>[.<group>]``."""
    group = obj.API_VERSION.rpartition("/")[0]
    if isinstance(obj, CustomObject):
        return f"count/{resource}"
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def _container_resources(pod: Pod) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) of a pod in milli-units: the containers' sum, at least the
    largest init container, plus overhead (``resourcehelper.PodRequests``/``PodLimits``)."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    for container in pod.spec.containers:
        for name, value in container.resources.requests.items():
            requests[name] = requests.get(name, 0) + parse_quantity(value)
        for name, value in container.resources.limits.items():
            limits[name] = limits.get(name, 0) + parse_quantity(value)
    for container in pod.spec.init_containers:
        for name, value in container.resources.requests.items():
            requests[name] = max(requests.get(name, 0), parse_quantity(value))
        for name, value in container.resources.limits.items():
            limits[name] = max(limits.get(name, 0), parse_quantity(value))
    for name, value in pod.spec.overhead.items():
        requests[name] = requests.get(name, 0) + parse_quantity(value)
        if name in limits:
            limits[name] += parse_quantity(value)
    return requests, limits


def usage(obj: Object, resource: str) -> dict[str, int]:
    """What ``obj`` counts against quotas (milli-units; counts are 1000 per object).
    ``resource`` is its plural resource name."""
    used: dict[str, int] = {_qualified(resource, obj): 1000}
    if isinstance(obj, Pod):
        if obj.status.phase in ("Succeeded", "Failed"):
            return {}
        used["pods"] = 1000
        requests, limits = _container_resources(obj)
        for name, value in requests.items():
            used[f"requests.{name}"] = value
            if name in _COMPUTE:
                used[name] = value
        for name, value in limits.items():
            used[f"limits.{name}"] = value
    elif isinstance(obj, Service):
        used["services"] = 1000
        if obj.spec.type == "LoadBalancer":
            used["services.loadbalancers"] = 1000
        if obj.spec.type in ("NodePort", "LoadBalancer"):
            used["services.nodeports"] = 1000 * len(obj.spec.ports)
    elif isinstance(obj, PersistentVolumeClaim):
        used["persistentvolumeclaims"] = 1000
        storage = parse_quantity(obj.spec.resources.requests.get("storage", "0"))
        used["requests.storage"] = storage
        if obj.spec.storage_class_name:
            prefix = f"{obj.spec.storage_class_name}.storageclass.storage.k8s.io/"
            used[prefix + "requests.storage"] = storage
            used[prefix + "persistentvolumeclaims"] = 1000
    elif resource in ("configmaps", "secrets", "replicationcontrollers", "resourcequotas"):
        used[resource] = 1000
    return used


def _best_effort(pod: Pod) -> bool:
    return all(not container.resources.requests and not container.resources.limits for container in (*pod.spec.containers, *pod.spec.init_containers))


def _scope_matches(scope: str, pod: Pod) -> bool:
    if scope == "Terminating":
        return pod.spec.active_deadline_seconds is not None
    if scope == "NotTerminating":
        return pod.spec.active_deadline_seconds is None
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    return False


def quota_matches(quota: ResourceQuota, obj: Object) -> bool:
    """Whether ``quota``'s scopes select ``obj`` (scoped quotas select pods only)."""
    scopes = list(quota.spec.scopes)
    selector = quota.spec.scope_selector or {}
    expressions = selector.get("matchExpressions") or []
    if not scopes and not expressions:
        return True
    if not isinstance(obj, Pod):
        return False
    for scope in scopes:
        if scope == "PriorityClass":
            continue
        if not _scope_matches(scope, obj):
            return False
    for expression in expressions:
        name, operator, values = expression.get("scopeName", ""), expression.get("operator", ""), expression.get("values") or []
        if name == "PriorityClass":
            priority_class = obj.spec.priority_class_name
            ok = {
                "In": priority_class in values, "NotIn": priority_class not in values,
                "Exists": bool(priority_class), "DoesNotExist": not priority_class,
            }.get(operator, False)
        else:
            ok = _scope_matches(name, obj) if operator in ("Exists", "") else False
        if not ok:
            return False
    return True


def show_quantity(milli: int, name: str) -> str:
    """How quota status prints ``milli`` of resource ``name``: counts whole, cpu in milli-CPU."""
    if name.startswith("count/") or name in ("pods", "services", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas", "services.loadbalancers", "services.nodeports") or name.endswith("/persistentvolumeclaims"):
        return str(milli // 1000)
    if "cpu" in name:
        return format_milli(milli)
    if milli % 1000:
        return format_milli(milli)
    whole = milli // 1000
    for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if whole and whole % size == 0:
            return f"{whole // size}{suffix}"  # Quantity.String() of a binary-SI sum
    return str(whole)


def _pretty(values: Mapping[str, int]) -> str:
    return ",".join(f"{name}={show_quantity(value, name)}" for name, value in sorted(values.items()))


def _must_specify(quota: ResourceQuota, obj: Object) -> list[str]:
    """``podComputeUsageHelper``'s ``Constraints``: a quota on requests/limits of cpu or
    memory needs every container to state them."""
    if not isinstance(obj, Pod):
        return []
    missing: list[str] = []
    hard = quota.status.hard or quota.spec.hard
    for key in ("limits.cpu", "limits.memory", "requests.cpu", "requests.memory"):
        if key not in hard and not (key.startswith("requests.") and key.split(".", 1)[1] in hard):
            continue
        kind, name = key.split(".", 1)
        lacking = [container.name for container in obj.spec.containers if name not in getattr(container.resources, kind)]
        if lacking:
            missing.append(f"{key} for: {','.join(lacking)}")
    return missing


def check_quota(quotas: Iterable[ResourceQuota], obj: Object, resource: str) -> tuple[str | None, list[tuple[ResourceQuota, dict[str, int]]]]:
    """(refusal or None, [(quota, increment)]) for creating ``obj``: the message the
    ResourceQuota plugin answers (without the ``<resource> "<name>" is forbidden:``
    prefix), or the increments to charge to each matching quota's ``status.used``."""
    delta = usage(obj, resource)
    charges: list[tuple[ResourceQuota, dict[str, int]]] = []
    for quota in sorted(quotas, key=lambda quota: quota.metadata.name):
        if not quota_matches(quota, obj):
            continue
        name = quota.metadata.name
        constrained = {key: value for key, value in delta.items() if key in quota.spec.hard}
        missing = _must_specify(quota, obj)
        if missing:
            return f"failed quota: {name}: must specify {'; '.join(missing)}", []
        if not constrained:
            continue
        hard = {key: parse_quantity(value) for key, value in quota.status.hard.items()}
        unknown = sorted(key for key in constrained if key not in hard)
        if unknown:
            return f"status unknown for quota: {name}, resource: {', '.join(unknown)}", []
        used = {key: parse_quantity(value) for key, value in quota.status.used.items()}
        exceeded = sorted(key for key, value in constrained.items() if used.get(key, 0) + value > hard[key])
        if exceeded:
            requested = {key: constrained[key] for key in exceeded}
            return (
                f"exceeded quota: {name}, requested: {_pretty(requested)}, used: {_pretty({key: used.get(key, 0) for key in exceeded})}, limited: {_pretty({key: hard[key] for key in exceeded})}",
                [],
            )
        charges.append((quota, constrained))
    return None, charges


def recalculate(quota: ResourceQuota, objects: Iterable[tuple[str, Object]]) -> dict[str, str]:
    """``status.used`` as the resourcequota controller computes it: the sum over the
    matching objects of the namespace (``(resource, object)`` pairs) of every resource the
    quota constrains (0 for those nothing uses)."""
    totals = {key: 0 for key in quota.spec.hard}
    for resource, obj in objects:
        if obj.metadata.deletion_timestamp is not None and isinstance(obj, Pod) and obj.status.phase in ("Succeeded", "Failed"):
            continue
        if not quota_matches(quota, obj):
            continue
        for key, value in usage(obj, resource).items():
            if key in totals:
                totals[key] += value
    return {key: show_quantity(value, key) for key, value in sorted(totals.items())}


__all__ += ["recalculate", "show_quantity"]


# =========================================================================== LimitRanger


def _container_defaults(limit_range: LimitRange) -> tuple[dict[str, str], dict[str, str]]:
    """``defaultContainerResourceRequirements``: (requests, limits) of the Container items."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for item in limit_range.spec.limits:
        if item.type != "Container":
            continue
        requests.update(item.default_request)
        limits.update(item.default)
    return requests, limits


def limit_range_defaults(limit_ranges: Iterable[LimitRange], pod: Pod) -> list[str]:
    """Write, in place, the LimitRanges' container defaults into ``pod``
    (``mergePodResourceRequirements``); the annotation's phrases, e.g.
    ``cpu, memory request for container web``."""
    phrases: list[str] = []
    for limit_range in sorted(limit_ranges, key=lambda lr: lr.metadata.name):
        default_requests, default_limits = _container_defaults(limit_range)
        for container in (*pod.spec.init_containers, *pod.spec.containers):
            set_requests = [name for name in sorted(default_requests) if name not in container.resources.requests and name not in container.resources.limits]
            for name in set_requests:
                container.resources.requests[name] = default_requests[name]
            set_limits = [name for name in sorted(default_limits) if name not in container.resources.limits]
            for name in set_limits:
                container.resources.limits[name] = default_limits[name]
            # a request defaults to its (defaulted) limit, as SetDefaults_Pod does
            for name, value in container.resources.limits.items():
                if name not in container.resources.requests:
                    container.resources.requests[name] = value
                    if name not in set_requests:
                        set_requests.append(name)
            if set_requests:
                phrases.append(f"{', '.join(sorted(set_requests))} request for container {container.name}")
            if set_limits:
                phrases.append(f"{', '.join(set_limits)} limit for container {container.name}")
    return phrases


def _min(kind: str, name: str, enforced: str, request: Mapping[str, str], limit: Mapping[str, str]) -> str | None:
    """``minConstraint``"""
    if name not in request:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if parse_quantity(request[name]) < parse_quantity(enforced):
        return f"minimum {name} usage per {kind} is {enforced}, but request is {request[name]}"
    if name in limit and parse_quantity(limit[name]) < parse_quantity(enforced):
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {limit[name]}"
    return None


def _max(kind: str, name: str, enforced: str, request: Mapping[str, str], limit: Mapping[str, str]) -> str | None:
    """``maxConstraint``"""
    if name not in limit:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if parse_quantity(limit[name]) > parse_quantity(enforced):
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {limit[name]}"
    if name in request and parse_quantity(request[name]) > parse_quantity(enforced):
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request[name]}"
    return None


def _max_request(kind: str, name: str, enforced: str, request: Mapping[str, str]) -> str | None:
    """``maxRequestConstraint`` (a claim's storage: requests only)"""
    if name not in request:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if parse_quantity(request[name]) > parse_quantity(enforced):
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request[name]}"
    return None


def _ratio(kind: str, name: str, enforced: str, request: Mapping[str, str], limit: Mapping[str, str]) -> str | None:
    """``limitRequestRatioConstraint``"""
    requested = parse_quantity(request[name]) if name in request else 0
    limited = parse_quantity(limit[name]) if name in limit else 0
    if requested == 0:
        return f"{name} max limit to request ratio per {kind} is {enforced}, but no request is specified or request is 0"
    if limited == 0:
        return f"{name} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit is 0"
    observed = limited / requested
    if observed * 1000 > parse_quantity(enforced):
        return f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {observed:f}"
    return None


def _pod_total(pod: Pod, field: str) -> dict[str, str]:
    """``podRequests`` / ``podLimits``: the containers summed (restartable init containers
    too), then the largest of that and each init container's (with the restartable ones
    started before it)."""
    totals: dict[str, int] = {}
    for container in pod.spec.containers:
        for key, value in getattr(container.resources, field).items():
            totals[key] = totals.get(key, 0) + parse_quantity(value)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for container in pod.spec.init_containers:
        own = {key: parse_quantity(value) for key, value in getattr(container.resources, field).items()}
        if container.restart_policy == "Always":
            for key, value in own.items():
                totals[key] = totals.get(key, 0) + value
                sidecars[key] = sidecars.get(key, 0) + value
            effective = dict(sidecars)
        else:
            effective = {key: own.get(key, 0) + sidecars.get(key, 0) for key in {*own, *sidecars}}
        for key, value in effective.items():
            init_max[key] = max(init_max.get(key, value), value)
    for key, value in init_max.items():
        totals[key] = max(totals.get(key, value), value)
    return {key: format_milli(value) for key, value in sorted(totals.items())}


def limit_range_problems(limit_ranges: Iterable[LimitRange], obj: Object) -> list[list[str]]:
    """``PodValidateLimitFunc`` / ``PersistentVolumeClaimValidateLimitFunc``: per
    LimitRange (in name order), the constraints ``obj`` violates (empty lists left out)."""
    found: list[list[str]] = []
    for limit_range in sorted(limit_ranges, key=lambda lr: lr.metadata.name):
        problems: list[str] = []
        for item in limit_range.spec.limits:
            checks = ((item.min, _min), (item.max, _max), (item.max_limit_request_ratio, _ratio))
            if isinstance(obj, Pod) and item.type == "Container":
                containers: list[Container] = [*obj.spec.containers, *obj.spec.init_containers]
                for container in containers:
                    for values, check in checks:
                        for name, enforced in sorted(values.items()):
                            problem = check("Container", name, enforced, container.resources.requests, container.resources.limits)
                            if problem:
                                problems.append(problem)
            elif isinstance(obj, Pod) and item.type == "Pod":
                requests = _pod_total(obj, "requests")
                limits = _pod_total(obj, "limits")
                for values, check in checks:
                    for name, enforced in sorted(values.items()):
                        problem = check("Pod", name, enforced, requests, limits)
                        if problem:
                            problems.append(problem)
            elif isinstance(obj, PersistentVolumeClaim) and item.type == "PersistentVolumeClaim":
                requests = obj.spec.resources.requests
                for name, enforced in sorted(item.min.items()):
                    problem = _min("PersistentVolumeClaim", name, enforced, requests, {})
                    if problem:
                        problems.append(problem)
                for name, enforced in sorted(item.max.items()):
                    problem = _max_request("PersistentVolumeClaim", name, enforced, requests)
                    if problem:
                        problems.append(problem)
        if problems:
            found.append(problems)
    return found


def kind_resource(obj: Object) -> str:
    """The plural resource of ``obj``."""
    info = KINDS.get(obj.KIND)
    return info.resource if info is not None and info.type is type(obj) else obj.RESOURCE


__all__ += ["kind_resource"]

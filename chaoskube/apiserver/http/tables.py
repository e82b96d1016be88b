"""Server-side printing: ``meta.k8s.io/v1`` ``Table`` responses, what ``kubectl get`` asks for
(``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``).

Columns and cells follow upstream's printers (``pkg/printers/internalversion/printers.go``)
for the built-in kinds modelled here; every other kind (a kind added to the registry, a
CustomResourceDefinition) gets the default table convertor's columns, Name and Created At
(``k8s.io/apiserver/pkg/registry/rest/table.go``), so it prints without more work; a custom
resource its CRD's ``additionalPrinterColumns`` (or Age). Cells are
computed from the objects' JSON, so they read exactly what the client would read.

Ages are ``duration.HumanDuration`` (``k8s.io/apimachinery/pkg/util/duration``) of the
server's clock (virtual time) minus the timestamp. Each row carries its object as
``PartialObjectMetadata`` (``includeObject=Metadata``, the default), the full object with
``includeObject=Object``, or nothing with ``None`` (``handlers/response.go`` ``asTable``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoskube.api.protocol import parse_timestamp

__all__ = ["Column", "human_duration", "printer_columns", "table"]

Column = dict[str, Any]
Row = list[Any]


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _age(obj: dict[str, Any], now: float) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    return human_duration(now - parse_timestamp(created))


def _col(name: str, type_: str = "string", description: str = "", *, format_: str = "", priority: int = 0) -> Column:
    return {"name": name, "type": type_, "format": format_, "description": description, "priority": priority}


_NAME = _col("Name", format_="name", description="Name must be unique within a namespace.")
_AGE = _col("Age", description="CreationTimestamp is a timestamp representing the server time when this object was created.")


def _dig(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return default
        obj = obj.get(key)
    return default if obj is None else obj


def _containers(spec: dict[str, Any]) -> tuple[str, str]:
    containers = _dig(spec, "template", "spec", "containers", default=[])
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def _selector(selector: Any) -> str:
    if not isinstance(selector, dict):
        return "<none>"
    labels = selector.get("matchLabels") if "matchLabels" in selector or "matchExpressions" in selector else selector
    parts = [f"{key}={value}" for key, value in sorted((labels or {}).items())]
    for requirement in selector.get("matchExpressions") or []:
        operator = requirement.get("operator", "")
        values = ",".join(requirement.get("values") or [])
        key = requirement.get("key", "")
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key, "DoesNotExist": f"!{key}"}.get(operator, key))
    return ",".join(parts) or "<none>"


def _pod(obj: dict[str, Any], now: float) -> Row:
    """``printPod``: Ready, Status (the waiting/terminated reason of a container, else the
    phase; Terminating once deleted), Restarts; wide: IP, Node, Nominated Node, Readiness Gates."""
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    total = len(spec.get("containers") or [])
    reason = status.get("reason") or status.get("phase") or ""
    ready = restarts = 0
    for container in reversed(status.get("containerStatuses") or []):
        restarts += container.get("restartCount", 0)
        state = container.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
        elif "terminated" in state:
            terminated = state["terminated"] or {}
            reason = f"Signal:{terminated['signal']}" if terminated.get("signal") else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif "running" in state and container.get("ready"):
            ready += 1
    if _dig(obj, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    gates = spec.get("readinessGates") or []
    return [obj["metadata"]["name"], f"{ready}/{total}", reason, restarts, _age(obj, now),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
            f"{len(gates)}/{len(gates)}" if gates else "<none>"]


def _node(obj: dict[str, Any], now: float) -> Row:
    status = obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    ready = conditions.get("Ready")
    text = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if _dig(obj, "spec", "unschedulable"):
        text += ",SchedulingDisabled"
    labels = _dig(obj, "metadata", "labels", default={})
    roles = sorted(key.removeprefix("node-role.kubernetes.io/") for key in labels if key.startswith("node-role.kubernetes.io/"))
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [obj["metadata"]["name"], text, ",".join(roles) or "<none>", _age(obj, now), info.get("kubeletVersion", ""),
            addresses.get("InternalIP", "<none>"), addresses.get("ExternalIP", "<none>"), info.get("osImage", "<unknown>"),
            info.get("kernelVersion", "<unknown>"), info.get("containerRuntimeVersion", "<unknown>")]


def _service(obj: dict[str, Any], now: float) -> Row:
    spec = obj.get("spec") or {}
    ports = ",".join(f"{p.get('port')}{'/' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol') or 'TCP'}" for p in spec.get("ports") or [])
    external = ",".join(spec.get("externalIPs") or []) or ("<pending>" if spec.get("type") == "LoadBalancer" else "<none>")
    return [obj["metadata"]["name"], spec.get("type") or "ClusterIP", spec.get("clusterIP") or "<none>", external, ports or "<none>",
            _age(obj, now), _selector(spec.get("selector"))]


def _deployment(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    desired = spec.get("replicas", 1)
    containers, images = _containers(spec)
    return [obj["metadata"]["name"], f"{status.get('readyReplicas', 0)}/{desired}", status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0), _age(obj, now), containers, images, _selector(spec.get("selector"))]


def _replicaset(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers, images = _containers(spec)
    return [obj["metadata"]["name"], spec.get("replicas", 1), status.get("replicas", 0), status.get("readyReplicas", 0),
            _age(obj, now), containers, images, _selector(spec.get("selector"))]


def _namespace(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], _dig(obj, "status", "phase", default=""), _age(obj, now)]


def _pdb(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [obj["metadata"]["name"], str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
            str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A", status.get("disruptionsAllowed", 0), _age(obj, now)]


def _lease(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], _dig(obj, "spec", "holderIdentity", default=""), _age(obj, now)]


def _endpointslice(obj: dict[str, Any], now: float) -> Row:
    ports = ",".join(str(p.get("port", "<unset>")) for p in obj.get("ports") or []) or "<unset>"
    addresses = [address for endpoint in obj.get("endpoints") or [] for address in endpoint.get("addresses") or []]
    shown = ",".join(addresses[:3]) + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")
    return [obj["metadata"]["name"], obj.get("addressType", ""), ports, shown or "<unset>", _age(obj, now)]


def _priorityclass(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], obj.get("value", 0), bool(obj.get("globalDefault", False)), _age(obj, now), obj.get("preemptionPolicy", "PreemptLowerPriority")]


def _webhooks(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], len(obj.get("webhooks") or []), _age(obj, now)]


# -- the common kinds (printers.go: printStatefulSet, printDaemonSet, printJob, printCronJob,
# printReplicationController, printConfigMap, printSecret, printServiceAccount,
# printPersistentVolume, printPersistentVolumeClaim, printStorageClass, printIngress,
# printHorizontalPodAutoscaler)
def _statefulset(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers, images = _containers(spec)
    return [obj["metadata"]["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", _age(obj, now), containers, images]


def _daemonset(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers, images = _containers(spec)
    node_selector = _dig(spec, "template", "spec", "nodeSelector", default={})
    return [obj["metadata"]["name"], status.get("desiredNumberScheduled", 0), status.get("currentNumberScheduled", 0), status.get("numberReady", 0),
            status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0), ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>",
            _age(obj, now), containers, images, _selector(spec.get("selector"))]


def _job_status(obj: dict[str, Any]) -> str:
    """``printJob``'s Status: the terminal condition, else Suspended or Running."""
    conditions = {c.get("type"): c.get("status") for c in _dig(obj, "status", "conditions", default=[])}
    for kind in ("Failed", "Complete", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if conditions.get(kind) == "True":
            return kind
    return "Running"


def _job(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif spec.get("parallelism", 1) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    duration = ""
    if status.get("startTime"):
        end = parse_timestamp(status["completionTime"]) if status.get("completionTime") else now
        duration = human_duration(end - parse_timestamp(status["startTime"]))
    containers, images = _containers(spec)
    return [obj["metadata"]["name"], _job_status(obj), completions, duration, _age(obj, now), containers, images, _selector(spec.get("selector"))]


def _cronjob(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    last = status.get("lastScheduleTime")
    containers, images = _containers(_dig(spec, "jobTemplate", "spec", default={}))
    return [obj["metadata"]["name"], spec.get("schedule", ""), spec.get("timeZone") or "<none>", str(bool(spec.get("suspend", False))).capitalize(),
            len(status.get("active") or []), human_duration(now - parse_timestamp(last)) if last else "<none>", _age(obj, now), containers, images,
            _selector(_dig(spec, "jobTemplate", "spec", "selector"))]


def _replicationcontroller(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers, images = _containers(spec)
    return [obj["metadata"]["name"], spec.get("replicas", 1), status.get("replicas", 0), status.get("readyReplicas", 0), _age(obj, now), containers, images,
            _selector(spec.get("selector"))]


def _configmap(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], len(obj.get("data") or {}) + len(obj.get("binaryData") or {}), _age(obj, now)]


def _secret(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], obj.get("type") or "Opaque", len(obj.get("data") or {}), _age(obj, now)]


def _serviceaccount(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], len(obj.get("secrets") or []), _age(obj, now)]


def _access_modes(modes: list[str]) -> str:
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    return ",".join(short.get(mode, mode) for mode in modes)


def _persistentvolume(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    claim = spec.get("claimRef") or {}
    return [obj["metadata"]["name"], _dig(spec, "capacity", "storage", default=""), _access_modes(spec.get("accessModes") or []),
            spec.get("persistentVolumeReclaimPolicy", ""), status.get("phase", ""), f"{claim['namespace']}/{claim['name']}" if claim.get("name") else "",
            spec.get("storageClassName", ""), spec.get("volumeAttributesClassName") or "<unset>", status.get("reason", ""), _age(obj, now), spec.get("volumeMode") or "Filesystem"]


def _persistentvolumeclaim(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    bound = spec.get("volumeName", "")
    phase = "Terminating" if _dig(obj, "metadata", "deletionTimestamp") else status.get("phase", "")
    return [obj["metadata"]["name"], phase, bound, _dig(status, "capacity", "storage", default="") if bound else "",
            _access_modes(status.get("accessModes") or []) if bound else "", spec.get("storageClassName") or "", spec.get("volumeAttributesClassName") or "<unset>",
            _age(obj, now), spec.get("volumeMode") or "Filesystem"]


def _storageclass(obj: dict[str, Any], now: float) -> Row:
    name = obj["metadata"]["name"]
    annotations = _dig(obj, "metadata", "annotations", default={})
    if annotations.get("storageclass.kubernetes.io/is-default-class") == "true" or annotations.get("storageclass.beta.kubernetes.io/is-default-class") == "true":
        name += " (default)"
    return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy") or "Delete", obj.get("volumeBindingMode") or "Immediate",
            bool(obj.get("allowVolumeExpansion", False)), _age(obj, now)]


def _ingress(obj: dict[str, Any], now: float) -> Row:
    spec = obj.get("spec") or {}
    hosts = [rule.get("host") or "*" for rule in spec.get("rules") or []]
    addresses = [entry.get("ip") or entry.get("hostname") or "" for entry in _dig(obj, "status", "loadBalancer", "ingress", default=[])]
    ports = "80, 443" if spec.get("tls") else "80"
    return [obj["metadata"]["name"], spec.get("ingressClassName") or "<none>", ",".join(hosts) or "*", ",".join(a for a in addresses if a), ports, _age(obj, now)]


def _hpa(obj: dict[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    target = spec.get("scaleTargetRef") or {}
    return [obj["metadata"]["name"], f"{target.get('kind', '')}/{target.get('name', '')}", "<unknown>" if spec.get("metrics") else "<none>",
            spec.get("minReplicas", 1), spec.get("maxReplicas", 0), status.get("currentReplicas", 0), _age(obj, now)]


def _since(stamp: Any, now: float) -> str:
    """``translateTimestampSince`` / ``translateMicroTimestampSince``."""
    return human_duration(now - parse_timestamp(stamp)) if stamp else "<unknown>"


def _event(obj: dict[str, Any], now: float) -> Row:
    """``printEvent`` (``pkg/printers/internalversion/printers.go``), wide as the server's
    table convertor prints: Last Seen is the series' last observation, else lastTimestamp,
    else the first; Count is the series' count, else count, else 1 (a singleton of the new
    API); Object ``<kind>/<name>`` in lower case; Source ``component, host``."""
    first = _since(obj.get("firstTimestamp"), now) if obj.get("firstTimestamp") else _since(obj.get("eventTime"), now)
    last = _since(obj.get("lastTimestamp"), now) if obj.get("lastTimestamp") else first
    count = obj.get("count") or 0
    series = obj.get("series")
    if isinstance(series, dict):
        last = _since(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    elif count == 0:
        count = 1
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    return [last, obj.get("type", ""), obj.get("reason", ""), target, involved.get("fieldPath", ""),
            f"{component}, {instance}" if instance else component, str(obj.get("message", "")).strip(), first, count, obj["metadata"]["name"]]


_PRINTERS: dict[str, tuple[list[Column], Callable[[dict[str, Any], float], Row]]] = {
    "Event": ([_col("Last Seen", description="The time at which the most recent occurrence of this event was recorded."),
               _col("Type", description="Type of this event (Normal, Warning), new types could be added in the future"),
               _col("Reason", description="This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
               _col("Object", description="The object that this event is about."),
               _col("Subobject", priority=1, description="If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]."),
               _col("Source", priority=1, description="The component reporting this event. Should be a short machine understandable string."),
               _col("Message", description="A human-readable description of the status of this operation."),
               _col("First Seen", priority=1, description="The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
               _col("Count", priority=1, description="The number of times this event has occurred."),
               _col("Name", priority=1, format_="name", description=_NAME["description"])], _event),
    "Pod": ([_NAME, _col("Ready", description="The aggregate readiness state of this pod for accepting traffic."), _col("Status", description="The aggregate status of the containers in this pod."),
             _col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."), _AGE,
             _col("IP", description="IP address allocated to the pod.", priority=1), _col("Node", description="Name of the Node the Pod is running on.", priority=1),
             _col("Nominated Node", description="Nominated node is set when this pod preempts other pods on the node.", priority=1), _col("Readiness Gates", description="The readiness gates of the pod.", priority=1)], _pod),
    "Node": ([_NAME, _col("Status", description="The status of the node"), _col("Roles", description="The roles of the node"), _AGE, _col("Version", description="Kubelet Version reported by the node."),
              _col("Internal-IP", priority=1), _col("External-IP", priority=1), _col("OS-Image", priority=1), _col("Kernel-Version", priority=1), _col("Container-Runtime", priority=1)], _node),
    "Service": ([_NAME, _col("Type"), _col("Cluster-IP"), _col("External-IP"), _col("Port(s)"), _AGE, _col("Selector", priority=1)], _service),
    "Deployment": ([_NAME, _col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer"), _AGE, _col("Containers", priority=1), _col("Images", priority=1), _col("Selector", priority=1)], _deployment),
    "ReplicaSet": ([_NAME, _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"), _AGE, _col("Containers", priority=1), _col("Images", priority=1), _col("Selector", priority=1)], _replicaset),
    "Namespace": ([_NAME, _col("Status"), _AGE], _namespace),
    "PodDisruptionBudget": ([_NAME, _col("Min Available"), _col("Max Unavailable"), _col("Allowed Disruptions", "integer"), _AGE], _pdb),
    "Lease": ([_NAME, _col("Holder"), _AGE], _lease),
    "EndpointSlice": ([_NAME, _col("AddressType"), _col("Ports"), _col("Endpoints"), _AGE], _endpointslice),
    "PriorityClass": ([_NAME, _col("Value", "integer"), _col("Global-Default", "boolean"), _AGE, _col("PreemptionPolicy")], _priorityclass),
    "MutatingWebhookConfiguration": ([_NAME, _col("Webhooks", "integer"), _AGE], _webhooks),
    "ValidatingWebhookConfiguration": ([_NAME, _col("Webhooks", "integer"), _AGE], _webhooks),
    "StatefulSet": ([_NAME, _col("Ready"), _AGE, _col("Containers", priority=1), _col("Images", priority=1)], _statefulset),
    "DaemonSet": ([_NAME, _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"), _col("Up-to-date", "integer"), _col("Available", "integer"),
                   _col("Node Selector"), _AGE, _col("Containers", priority=1), _col("Images", priority=1), _col("Selector", priority=1)], _daemonset),
    "Job": ([_NAME, _col("Status"), _col("Completions"), _col("Duration"), _AGE, _col("Containers", priority=1), _col("Images", priority=1), _col("Selector", priority=1)], _job),
    "CronJob": ([_NAME, _col("Schedule"), _col("Timezone"), _col("Suspend", "boolean"), _col("Active", "integer"), _col("Last Schedule"), _AGE,
                 _col("Containers", priority=1), _col("Images", priority=1), _col("Selector", priority=1)], _cronjob),
    "ReplicationController": ([_NAME, _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"), _AGE, _col("Containers", priority=1),
                               _col("Images", priority=1), _col("Selector", priority=1)], _replicationcontroller),
    "ConfigMap": ([_NAME, _col("Data", "string"), _AGE], _configmap),
    "Secret": ([_NAME, _col("Type"), _col("Data", "string"), _AGE], _secret),
    "ServiceAccount": ([_NAME, _col("Secrets", "string"), _AGE], _serviceaccount),
    "PersistentVolume": ([_NAME, _col("Capacity"), _col("Access Modes"), _col("Reclaim Policy"), _col("Status"), _col("Claim"), _col("StorageClass"),
                          _col("VolumeAttributesClass"), _col("Reason"), _AGE, _col("VolumeMode", priority=1)], _persistentvolume),
    "PersistentVolumeClaim": ([_NAME, _col("Status"), _col("Volume"), _col("Capacity"), _col("Access Modes"), _col("StorageClass"), _col("VolumeAttributesClass"), _AGE,
                               _col("VolumeMode", priority=1)], _persistentvolumeclaim),
    "StorageClass": ([_NAME, _col("Provisioner"), _col("ReclaimPolicy"), _col("VolumeBindingMode"), _col("AllowVolumeExpansion"), _AGE], _storageclass),
    "Ingress": ([_NAME, _col("Class"), _col("Hosts"), _col("Address"), _col("Ports"), _AGE], _ingress),
    "HorizontalPodAutoscaler": ([_NAME, _col("Reference"), _col("Targets"), _col("MinPods", "string"), _col("MaxPods", "string"), _col("Replicas", "string"), _AGE], _hpa),
}
_DEFAULT_COLUMNS = [_NAME, _col("Created At", "date", "CreationTimestamp is a timestamp representing the server time when this object was created.")]


# -- custom resources (apiextensions-apiserver ``registry/customresource/tableconvertor``):
# Name, then the CRD version's additionalPrinterColumns, or Age when it declares none
# (``apiextensions.DefaultPrinterColumns``); each cell is the column's JSONPath in the object
# (a ``date`` as an age, ``HumanDuration``).
_CUSTOM_DEFAULT = ({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": _AGE["description"]},)


def _custom_columns(custom: Any) -> list[dict[str, Any]]:
    return list(custom.columns or _CUSTOM_DEFAULT)


def _json_path(obj: Any, path: str) -> list[Any]:
    """The values of a Kubernetes JSONPath of the simple forms CRDs use (``.a.b``,
    ``.a[0]``, ``.a[*].b``, ``.a[?(@.type=="Ready")].status``, ``.a['x.y']``)."""
    import re

    current = [obj]
    for token in re.findall(r"\.([^.\[]+)|\[([^\]]*)\]", path.strip().strip("{}")):
        name, bracket = token
        found: list[Any] = []
        for value in current:
            if name:
                if isinstance(value, dict) and name in value:
                    found.append(value[name])
            elif bracket in ("*", ""):
                found.extend(value if isinstance(value, list) else (value.values() if isinstance(value, dict) else []))
            elif bracket.lstrip("-").isdigit():
                if isinstance(value, list) and -len(value) <= int(bracket) < len(value):
                    found.append(value[int(bracket)])
            elif bracket.startswith("?("):
                match = re.fullmatch(r"\?\(@\.([\w.-]+)\s*==\s*['\"]?([^'\"]*)['\"]?\)", bracket)
                if match and isinstance(value, list):
                    found.extend(item for item in value if isinstance(item, dict) and str(item.get(match.group(1))) == match.group(2))
            elif isinstance(value, dict) and bracket.strip("'\"") in value:
                found.append(value[bracket.strip("'\"")])
        current = found
    return current


def _custom_cell(obj: dict[str, Any], column: dict[str, Any], now: float) -> Any:
    values = _json_path(obj, column.get("jsonPath", ""))
    if not values:
        return None
    value = values[0] if len(values) == 1 else ",".join(str(v) for v in values)
    if column.get("type") == "date" and isinstance(value, str):
        try:
            return human_duration(now - parse_timestamp(value))
        except ValueError:
            return value
    return value


def printer_columns(kind: str, custom: Any = None) -> list[Column]:
    if custom is not None:
        return [_NAME] + [_col(c.get("name", ""), c.get("type", "string"), c.get("description", ""), format_=c.get("format", ""), priority=int(c.get("priority", 0))) for c in _custom_columns(custom)]
    return list(_PRINTERS[kind][0]) if kind in _PRINTERS else list(_DEFAULT_COLUMNS)


def _cells(kind: str, obj: dict[str, Any], now: float, custom: Any = None) -> Row:
    if custom is not None:
        return [obj["metadata"]["name"]] + [_custom_cell(obj, column, now) for column in _custom_columns(custom)]
    if kind in _PRINTERS:
        return _PRINTERS[kind][1](obj, now)
    return [obj["metadata"]["name"], _dig(obj, "metadata", "creationTimestamp", default="")]


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "Object":
        return obj
    if include == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(kind: str, objects: list[dict[str, Any]], now: float, *, include_object: str = "Metadata", headers: bool = True, resource_version: str = "", continue_token: str = "", remaining: int | None = None, custom: Any = None) -> dict[str, Any]:
    """The ``Table`` of ``objects`` (JSON forms of one kind). ``headers=False``: no column
    definitions (every watch event after the first, ``watchEmbeddedEncoder``). ``custom``:
    the :class:`~chaoskube.apiserver.http.routes.CustomKind` of a custom resource."""
    rows = [{"cells": _cells(kind, obj, now, custom), "object": _row_object(obj, include_object)} for obj in objects]
    metadata: dict[str, Any] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": printer_columns(kind, custom) if headers else None, "rows": rows}
    return out

"""What users and operators do to a cluster, defined once: the actions of the workload
generator (:mod:`chaoskube.workload.generator`) and the workload rules of
:class:`chaoskube.testing.ClusterMachine` both call these bodies.

Contract. An action is ``async def action(actor, **args) -> str``: it acts through
``actor.client`` (an :class:`~chaoskube.client.client.ApiClient`, as a user's ``kubectl``
or client program does), every API call through :meth:`Actor.call`, which bounds it by
``actor.op_timeout_s`` of virtual time, turns an :class:`ApiError` into an outcome instead
of raising (a refused write under faults is the cluster's answer, not the actor's bug) and
reports each call to ``actor.on_op``; it returns a one-line outcome (``ok``, ``error 409:
...``, ``skipped: no pod``). It never raises for an API error or a timeout; ``trio.Cancelled``
passes through (the generator stops its actions at the heal).

:data:`ACTIONS` lists the actions the generator draws, each with the names of its
arguments; :data:`ARG_CHOICES` gives every argument's values, first the simplest (where
Hypothesis shrinks). The generator draws them with its seeded ``random.Random``
(:func:`draw_args`); the machine builds its strategies from the same table
(:func:`strategy_values`), so the two cannot drift.

Upstream behaviour each action follows:

- ``kubectl create`` / ``scale`` / ``set image`` / ``rollout restart`` (the pod template's
  ``kubectl.kubernetes.io/restartedAt`` annotation,
  ``staging/src/k8s.io/kubectl/pkg/polymorphichelpers/objectrestarter.go``) / ``rollout undo``
  of a Deployment (``rollbacker.go``: the template of the ReplicaSet with the previous
  revision, its ``pod-template-hash`` label dropped, patched into the Deployment; "skipped"
  when there is no previous revision, as kubectl answers "no rollout history found");
- ``kubectl delete --cascade=background|foreground|orphan`` (``propagationPolicy``,
  https://kubernetes.io/docs/concepts/architecture/garbage-collection/#cascading-deletion);
- PodDisruptionBudgets created, changed (``minAvailable`` <-> ``maxUnavailable``) and deleted;
- ``kubectl delete pod`` (bypasses PDBs) and the Eviction API (honours them)
  (https://kubernetes.io/docs/concepts/workloads/pods/disruptions/);
- ``kubectl cordon`` / ``uncordon`` / ``drain --ignore-daemonsets``
  (:func:`chaoskube.node.kubelet.cordon`, :func:`~chaoskube.node.kubelet.drain`);
- ``kubectl create namespace`` / ``delete namespace`` (the namespace controller then deletes
  its content: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/);
- ``kubectl label node`` / ``kubectl taint node`` (NoSchedule, PreferNoSchedule; a
  read-modify-write of ``spec.taints`` with the resourceVersion precondition, retried on
  409 Conflict, so a taint the node lifecycle controller adds meanwhile is kept);
- ``kubectl create quota`` / ``kubectl apply`` of a changed ``spec.hard`` / ``kubectl delete
  quota`` in a churn namespace (:func:`quota_object`; "Resource Quotas",
  https://kubernetes.io/docs/concepts/policy/resource-quotas/);
- ``kubectl create storageclass`` and ``kubectl annotate`` of the default class
  (:func:`storage_class_object`; "Change the default StorageClass"), ``kubectl delete pvc``
  of a claim no pod mounts ("Persistent Volumes", Reclaiming).

Non-guarantees: an action that timed out may have happened (the client says so with an
``info`` operation in the journal); a pod picked by index is picked among the pods listed
at that moment, which differ from run to run under faults.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.manifests import from_dict, to_dict
from chaoskube.api.objects import KINDS
from chaoskube.api.protocol import DeleteOptions, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.sim import World

__all__ = [
    "ACTIONS",
    "ARG_CHOICES",
    "Action",
    "Actor",
    "GENERATOR_LABEL",
    "GENERATOR_TAINT_KEY",
    "IMAGES",
    "NAMESPACES",
    "NODE_LABEL_KEY",
    "RESTARTED_AT",
    "WIDGETS",
    "WORKLOAD_KINDS",
    "draw_args",
    "object_name",
    "strategy_values",
]

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # kubectl rollout restart's annotation
IMAGES = ("nginx:1.27", "nginx:1.28")
#: Every workload kind chaoskube's controllers run (chaoskube/controllers/).
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
SCALABLE = ("Deployment", "StatefulSet", "ReplicaSet")
ROLLABLE = ("Deployment", "StatefulSet", "DaemonSet")  # kubectl rollout restart / set image
SHORT = {"Deployment": "deploy", "StatefulSet": "sts", "DaemonSet": "ds", "ReplicaSet": "rs", "Job": "job", "CronJob": "cj"}
#: The namespaces the generator works in; only the others than ``default`` are created and deleted.
NAMESPACES = ("default", "churn-a", "churn-b")
#: Every object the generator creates carries this label (so its pods are told apart).
GENERATOR_LABEL = "chaoskube.io/generator"
NODE_LABEL_KEY = "chaoskube.io/pool"
GENERATOR_TAINT_KEY = "chaoskube.io/churn"
#: A Job's pods run this long, then exit 0 (chaoskube/node/runtime.py's behaviour annotation).
JOB_RUN_FOR = "5s"
#: How many times a read-modify-write retries on 409 Conflict (kubectl retries patches on conflict too).
CONFLICT_ATTEMPTS = 3
POD_CPU = "50m"
#: The Deployment controller's annotation and label (``pkg/controller/deployment/util/deployment_util.go``).
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"  # small: a generator run creates up to 18 workloads on a 3-node cluster

#: Every argument's values, the simplest first (where Hypothesis shrinks); the generator
#: draws uniformly among them.
ARG_CHOICES: dict[str, tuple[Any, ...]] = {
    "kind": WORKLOAD_KINDS,
    "scalable_kind": SCALABLE,
    "rollable_kind": ROLLABLE,
    "namespace": NAMESPACES,
    "extra_namespace": NAMESPACES[1:],
    "slot": (0, 1),
    "replicas": (1, 2, 3, 0),
    "change": ("restart", "image"),
    "propagation": ("Background", "Foreground", "Orphan"),
    "budget": ("maxUnavailable=1", "minAvailable=1", "maxUnavailable=0", "minAvailable=2"),
    "index": tuple(range(8)),
    "pool": ("a", "b", ""),
    "effect": ("NoSchedule", "PreferNoSchedule"),
    # issue 35: the application kinds where their bugs live
    "app_shape": ("sts-claims", "sts-parallel", "job-indexed", "job-failing", "job-deadline", "cron-replace", "cron-zoned"),
    "partition": (0, 1, 2),
    "quota_size": (1, 2),
    "reclaim": ("Retain", "Delete"),
    # issue 35: custom resources of the generator's CRD, valid ones and ones its schema refuses
    "custom_shape": ("valid", "defaulted", "unknown-field", "invalid-range", "invalid-enum", "missing-required", "retired-version"),
}


# ============================================================================ the actor
@dataclass
class Actor:
    """Who acts: a client (its process, its credentials), the nodes it may cordon, drain,
    label and taint, and its bounds. ``on_op(what, code, reason)`` hears every API call's
    outcome (code 200 for success, None for a timeout); ``ops`` keeps them for the current
    action (the generator journals them with the action)."""

    world: World
    client: ApiClient
    nodes: Sequence[str]
    op_timeout_s: float = 30.0
    drain_timeout_s: float = 30.0
    on_op: Callable[[str, int | None, str], None] | None = None
    ops: list[tuple[str, int | None, str]] = field(default_factory=list)

    async def call(self, what: str, fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """``await fn(*args, **kwargs)`` bounded by ``op_timeout_s``; an API error or the
        timeout is reported and answered None (module docstring); a success returns the
        result (True when the call returns nothing)."""
        result = None
        with self.client.process.move_on_after(self.op_timeout_s) as scope:
            try:
                result = await fn(*args, **kwargs)
            except ApiError as error:
                self._op(what, error.code, error.reason)
                return None
        if scope.cancelled_caught:
            self._op(what, None, "op_timeout_s passed")
            return None
        self._op(what, 200, "")
        return result if result is not None else True

    def _op(self, what: str, code: int | None, reason: str) -> None:
        self.ops.append((what, code, reason))
        if self.on_op is not None:
            self.on_op(what, code, reason)

    def outcome(self, done: str = "ok") -> str:
        """``done`` when every call of the action succeeded, else its first failure."""
        for what, code, reason in self.ops:
            if code != 200:
                return f"error {code if code is not None else 'timeout'}: {what}: {reason}"[:240]
        return done

    def fresh(self) -> Actor:
        """The same actor with no operations recorded yet (one per action)."""
        return dataclasses.replace(self, ops=[])

    def node(self, index: int) -> str:
        assert self.nodes, "the cluster has nodes"
        return self.nodes[index % len(self.nodes)]


# ============================================================================ objects
def object_name(kind: str, slot: int) -> str:
    """The generator's name for its ``slot``-th object of ``kind``: ``deploy-0``, ``sts-2``..."""
    return f"{SHORT[kind]}-{slot}"


def container(image: str, cpu: str = "100m") -> dict[str, Any]:
    return {"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}


def workload_object(kind: str, namespace: str, name: str, replicas: int, *, cpu: str = "100m", generated: bool = False) -> Any:
    """A workload of ``kind`` running ``nginx`` pods labelled ``app=<name>`` (a Job's pods
    exit after :data:`JOB_RUN_FOR`; a CronJob's run every minute, never two at once)."""
    labels = {"app": name}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if generated:
        meta["labels"] = {GENERATOR_LABEL: "true"}
    template: dict[str, Any] = {"metadata": {"labels": labels}, "spec": {"containers": [container(IMAGES[0], cpu)]}}
    selector = {"matchLabels": labels}
    if kind in ("Job", "CronJob"):
        template["metadata"]["annotations"] = {"chaoskube.io/exit-after": JOB_RUN_FOR}
        template["spec"]["restartPolicy"] = "Never"
        job_spec = {"parallelism": max(1, replicas), "completions": max(1, replicas), "backoffLimit": 2, "template": template}
        if kind == "Job":
            return from_dict({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec})
        spec = {"schedule": "*/1 * * * *", "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1, "jobTemplate": {"spec": job_spec}}
        return from_dict({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": spec})
    spec: dict[str, Any] = {"selector": selector, "template": template}
    if kind in SCALABLE:
        spec["replicas"] = replicas
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return from_dict({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec})


def pdb_object(namespace: str, name: str, budget: str, *, generated: bool = False) -> Any:
    """A PodDisruptionBudget selecting ``app=<name>``; ``budget`` is ``maxUnavailable=N``
    or ``minAvailable=N``."""
    key, _, value = budget.partition("=")
    assert key in ("maxUnavailable", "minAvailable") and value.isdigit(), budget
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if generated:
        meta["labels"] = {GENERATOR_LABEL: "true"}
    spec = {key: int(value), "selector": {"matchLabels": {"app": name}}}
    return from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec})


def _resource(kind: str) -> str:
    return KINDS[kind].resource


# ============================================================================ bodies
async def create_workload(actor: Actor, kind: str, namespace: str, name: str, replicas: int, *, cpu: str = "100m", generated: bool = False) -> str:
    """``kubectl create`` of a workload (an existing one answers 409 AlreadyExists)."""
    await actor.call(f"create {kind.lower()} {namespace}/{name}", actor.client.create, workload_object(kind, namespace, name, replicas, cpu=cpu, generated=generated))
    return actor.outcome()


async def scale_workload(actor: Actor, kind: str, namespace: str, name: str, replicas: int) -> str:
    """``kubectl scale --replicas``: ``spec.replicas`` of a Deployment, StatefulSet or ReplicaSet."""
    if kind not in SCALABLE:
        return f"skipped: {kind} does not scale"
    await actor.call(f"scale {kind.lower()} {namespace}/{name}", actor.client.patch, _resource(kind), namespace, name, {"spec": {"replicas": replicas}})
    return actor.outcome()


async def update_workload(actor: Actor, kind: str, namespace: str, name: str, change: str) -> str:
    """A new pod template, so the controller rolls out: ``kubectl rollout restart``
    (``restart``: the ``restartedAt`` annotation, stamped with virtual time) or ``kubectl set
    image`` (``image``: the other of two images)."""
    if kind not in ROLLABLE:
        return f"skipped: {kind} does not roll out"
    if change == "restart":
        patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: timestamp(actor.world.now)}}}}}
    else:
        current = await actor.call(f"get {kind.lower()} {namespace}/{name}", actor.client.get, _resource(kind), namespace, name)
        if current is None:
            return actor.outcome()
        containers = to_dict(current)["spec"]["template"]["spec"].get("containers") or [{}]
        image = containers[0].get("image", IMAGES[0])
        cpu = containers[0].get("resources", {}).get("requests", {}).get("cpu", "100m")
        patch = {"spec": {"template": {"spec": {"containers": [container(IMAGES[1] if image == IMAGES[0] else IMAGES[0], str(cpu))]}}}}
    await actor.call(f"update {kind.lower()} {namespace}/{name} ({change})", actor.client.patch, _resource(kind), namespace, name, patch)
    return actor.outcome()


async def undo_deployment(actor: Actor, namespace: str, name: str) -> str:
    """``kubectl rollout undo deployment`` (``polymorphichelpers/rollbacker.go``
    ``DeploymentRollbacker``): the ReplicaSet of the highest revision below the current
    one gives its template, without ``pod-template-hash``, to the Deployment."""
    deployment = await actor.call(f"get deployment {namespace}/{name}", actor.client.get, "deployments", namespace, name)
    if deployment is None:
        return actor.outcome()
    listed = await actor.call(f"list replicasets {namespace}", actor.client.list, "replicasets", namespace)
    if listed is None:
        return actor.outcome()
    uid = deployment.metadata.uid
    owned = []
    for replica_set in listed.items:
        if not any(ref.uid == uid and ref.controller for ref in replica_set.metadata.owner_references):
            continue
        text = replica_set.metadata.annotations.get(REVISION_ANNOTATION, "")
        if text.isdigit():
            owned.append((int(text), replica_set.metadata.name, replica_set))
    if len(owned) < 2:
        return "skipped: no rollout history found"
    owned.sort(key=lambda entry: (entry[0], entry[1]))
    previous = owned[-2][2]
    template = to_dict(previous)["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("labels", {}).pop(POD_TEMPLATE_HASH_LABEL, None)
    # A merge patch replaces the template's maps key by key; set the whole template with the
    # resourceVersion precondition instead, as the rollbacker's patch carries the full template.
    body = to_dict(deployment)
    body["spec"]["template"] = template
    await actor.call(f"undo deployment {namespace}/{name} to revision {owned[-2][0]}", actor.client.update, from_dict(body))
    return actor.outcome(f"ok: rolled back to revision {owned[-2][0]}")


async def delete_object(actor: Actor, kind: str, namespace: str, name: str, propagation: str = "") -> str:
    """``kubectl delete KIND NAME [--cascade=...]``: ``propagation`` is ``Background``,
    ``Foreground``, ``Orphan`` or "" (the resource's default)."""
    options = DeleteOptions(propagation_policy=propagation) if propagation else None
    await actor.call(f"delete {kind.lower()} {namespace}/{name}" + (f" ({propagation})" if propagation else ""), actor.client.delete, _resource(kind), namespace, name, options=options)
    return actor.outcome()


async def create_pdb(actor: Actor, namespace: str, name: str, budget: str, *, generated: bool = False) -> str:
    await actor.call(f"create pdb {namespace}/{name}", actor.client.create, pdb_object(namespace, name, budget, generated=generated))
    return actor.outcome()


async def change_pdb(actor: Actor, namespace: str, name: str, budget: str) -> str:
    """Replace the budget (``minAvailable`` or ``maxUnavailable``; the other is removed by
    the merge patch's null)."""
    key, _, value = budget.partition("=")
    other = "minAvailable" if key == "maxUnavailable" else "maxUnavailable"
    await actor.call(f"change pdb {namespace}/{name} ({budget})", actor.client.patch, "poddisruptionbudgets", namespace, name, {"spec": {key: int(value), other: None}})
    return actor.outcome()


async def pods_of(actor: Actor, namespace: str, label_selector: str = "") -> list[Any]:
    """The live pods of ``namespace`` ("": every namespace) matching ``label_selector``,
    sorted by namespace and name."""
    listed = await actor.call(f"list pods {namespace or '-A'}" + (f" {label_selector}" if label_selector else ""), actor.client.list, "pods", namespace, label_selector=label_selector)
    if not listed:
        return []
    return sorted((pod for pod in listed.items if pod.metadata.deletion_timestamp is None), key=lambda pod: (pod.metadata.namespace, pod.metadata.name))


async def delete_pod(actor: Actor, namespace: str, index: int, label_selector: str = "") -> str:
    """``kubectl delete pod`` of the ``index``-th live pod (modulo their number)."""
    pods = await pods_of(actor, namespace, label_selector)
    if not pods:
        return actor.outcome("skipped: no pod")
    pod = pods[index % len(pods)]
    where = pod.metadata.namespace
    await actor.call(f"delete pod {where}/{pod.metadata.name}", actor.client.delete, "pods", where, pod.metadata.name)
    return actor.outcome()


async def evict_pod(actor: Actor, namespace: str, index: int, label_selector: str = "") -> str:
    """The Eviction API (``POST pods/<name>/eviction``) on the ``index``-th live pod: the
    PDB-guarded path (429 while a budget allows no disruption)."""
    pods = await pods_of(actor, namespace, label_selector)
    if not pods:
        return actor.outcome("skipped: no pod")
    pod = pods[index % len(pods)]
    where = pod.metadata.namespace
    await actor.call(f"evict pod {where}/{pod.metadata.name}", actor.client.evict, where, pod.metadata.name)
    return actor.outcome()


async def cordon(actor: Actor, index: int, unschedulable: bool = True) -> str:
    from chaoskube.node.kubelet import cordon as kubectl_cordon

    node = actor.node(index)
    await actor.call(f"{'cordon' if unschedulable else 'uncordon'} {node}", kubectl_cordon, actor.client, node, unschedulable=unschedulable)
    return actor.outcome()


async def drain(actor: Actor, index: int) -> str:
    """``kubectl drain`` by the user, awaited, bounded by ``drain_timeout_s``."""
    from chaoskube.node.kubelet import drain as kubectl_drain

    node = actor.node(index)
    result = await actor.call(f"drain {node}", kubectl_drain, actor.client, node, timeout_s=actor.drain_timeout_s)
    if result is None or result is True:
        return actor.outcome()
    return actor.outcome("drained" if result.completed else f"incomplete: {len(result.remaining)} remaining, {len(result.errors)} error(s)")


async def create_namespace(actor: Actor, namespace: str) -> str:
    body = from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {GENERATOR_LABEL: "true"}}})
    await actor.call(f"create namespace {namespace}", actor.client.create, body)
    return actor.outcome()


async def delete_namespace(actor: Actor, namespace: str) -> str:
    """``kubectl delete namespace``: the namespace goes Terminating and the namespace
    controller deletes everything in it, then its finalizer."""
    assert namespace != "default", "the generator never deletes the default namespace"
    await actor.call(f"delete namespace {namespace}", actor.client.delete, "namespaces", "", namespace)
    return actor.outcome()


async def label_node(actor: Actor, index: int, pool: str) -> str:
    """``kubectl label node NODE chaoskube.io/pool=POOL`` (``pool`` "": the label removed)."""
    node = actor.node(index)
    await actor.call(f"label {node} {NODE_LABEL_KEY}={pool or '-'}", actor.client.patch, "nodes", "", node, {"metadata": {"labels": {NODE_LABEL_KEY: pool or None}}})
    return actor.outcome()


async def taint_node(actor: Actor, index: int, effect: str = "") -> str:
    """``kubectl taint node NODE chaoskube.io/churn=true:EFFECT`` (``effect`` "": the
    taint removed, ``kubectl taint node NODE chaoskube.io/churn-``). Read-modify-write with
    the resourceVersion precondition, retried on 409 (module docstring)."""
    node = actor.node(index)
    what = f"taint {node} {GENERATOR_TAINT_KEY}" + (f"=true:{effect}" if effect else "-")
    for _ in range(CONFLICT_ATTEMPTS):
        before = len(actor.ops)
        current = await actor.call(f"get node {node}", actor.client.get, "nodes", "", node)
        if current is None:
            return actor.outcome()
        body = to_dict(current)
        taints = [taint for taint in body["spec"].get("taints", []) if taint.get("key") != GENERATOR_TAINT_KEY]
        if effect:
            taints.append({"key": GENERATOR_TAINT_KEY, "value": "true", "effect": effect})
        if taints == body["spec"].get("taints", []):
            return actor.outcome("ok: unchanged")
        body["spec"]["taints"] = taints
        done = await actor.call(what, actor.client.update, from_dict(body))
        if done is not None or actor.ops[-1][1] != 409:
            return actor.outcome()
        del actor.ops[before:]  # a conflict: read again, as kubectl's patch retries
    return actor.outcome()


# ============================================================================ application shapes (issue 35)
#: How long the pods of a shaped Job or CronJob run (their ``chaoskube.io/exit-after``).
APP_RUN_FOR = {"job-indexed": "6s", "job-failing": "2s", "job-deadline": "10m", "cron-replace": "90s", "cron-zoned": "20s"}


def app_object(shape: str, namespace: str, name: str) -> Any:
    """A workload of one of the shapes of ``ARG_CHOICES["app_shape"]``, each where its
    controller's bugs live (docs/experiments.md, "The application kinds"):

    - ``sts-claims``: a StatefulSet of 3, OrderedReady, a volume claim per member (the default
      StorageClass: zonal, WaitForFirstConsumer), a rolling update partitioned at 1;
    - ``sts-parallel``: a StatefulSet of 3, Parallel pod management, no partition;
    - ``job-indexed``: an Indexed Job of 4 completions, 2 at a time;
    - ``job-failing``: a Job whose pods exit 1, backoffLimit 1;
    - ``job-deadline``: a Job whose pods would run 10 minutes, activeDeadlineSeconds 30;
    - ``cron-replace``: a CronJob every minute, Replace, 90 s runs (each replaces the last);
    - ``cron-zoned``: a CronJob every 2 minutes in Europe/Berlin, Forbid,
      startingDeadlineSeconds 30."""
    labels = {"app": name}
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {GENERATOR_LABEL: "true"}}
    template: dict[str, Any] = {"metadata": {"labels": labels}, "spec": {"containers": [container(IMAGES[0], POD_CPU)]}}
    if shape.startswith("sts-"):
        spec: dict[str, Any] = {"serviceName": name, "replicas": 3, "selector": {"matchLabels": labels}, "template": template}
        if shape == "sts-claims":
            spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
            template["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
            spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
        else:
            spec["podManagementPolicy"] = "Parallel"
        return from_dict({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": spec})
    template["metadata"]["annotations"] = {"chaoskube.io/exit-after": APP_RUN_FOR[shape]}
    template["spec"]["restartPolicy"] = "Never"
    job_spec: dict[str, Any] = {"template": template}
    if shape == "job-indexed":
        job_spec.update(completionMode="Indexed", completions=4, parallelism=2)
    elif shape == "job-failing":
        template["metadata"]["annotations"]["chaoskube.io/exit-code"] = "1"
        job_spec["backoffLimit"] = 1
    elif shape == "job-deadline":
        job_spec["activeDeadlineSeconds"] = 30
    if shape.startswith("job-"):
        return from_dict({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec})
    cron: dict[str, Any] = {"jobTemplate": {"spec": job_spec}, "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}
    if shape == "cron-replace":
        cron.update(schedule="*/1 * * * *", concurrencyPolicy="Replace")
    else:
        cron.update(schedule="*/2 * * * *", timeZone="Europe/Berlin", concurrencyPolicy="Forbid", startingDeadlineSeconds=30)
    return from_dict({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": cron})


async def _create_app(actor: Actor, app_shape: str, namespace: str, slot: int) -> str:
    obj = app_object(app_shape, namespace, f"{app_shape}-{slot}")
    await actor.call(f"create {obj.KIND.lower()} {namespace}/{obj.metadata.name}", actor.client.create, obj)
    return actor.outcome()


#: The generator's ResourceQuota (one per churn namespace).
QUOTA_NAME = "generator-quota"


def quota_object(namespace: str, size: int) -> Any:
    """The generator's ResourceQuota (``kubectl create quota generator-quota
    --hard=...``): object counts of the kinds only a user creates, ``size`` of each, so a
    create past them is refused at admission (the generator's action answers 403, nothing
    is left half-made), and ``60 * size`` pods -- room for every pod the
    generator's workloads of a namespace ask for (so a Deployment is never held below its
    replicas, which convergence would judge), each charged at admission while the
    controllers create them concurrently through both API servers (docs/experiments.md)."""
    hard = {"pods": str(60 * size), "count/deployments.apps": str(size), "count/statefulsets.apps": str(size),
            "count/cronjobs.batch": str(size), "count/poddisruptionbudgets.policy": str(size)}
    return from_dict({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": QUOTA_NAME, "namespace": namespace, "labels": {GENERATOR_LABEL: "true"}},
                      "spec": {"hard": hard}})


async def _set_quota(actor: Actor, extra_namespace: str, quota_size: int) -> str:
    """``kubectl create quota``, or, when it exists, ``kubectl apply`` of the new ``spec.hard``
    (a merge patch: a raised or lowered hard; lowering it below what is used evicts nothing)."""
    quota = quota_object(extra_namespace, quota_size)
    before = len(actor.ops)
    if await actor.call(f"create resourcequota {extra_namespace}/{QUOTA_NAME}", actor.client.create, quota) is not None or actor.ops[-1][1] != 409:
        return actor.outcome()
    del actor.ops[before:]  # AlreadyExists: apply the new hard instead
    await actor.call(f"patch resourcequota {extra_namespace}/{QUOTA_NAME} (hard x{quota_size})", actor.client.patch, "resourcequotas", extra_namespace, QUOTA_NAME, {"spec": {"hard": dict(quota.spec.hard)}})
    return actor.outcome()


async def _delete_quota(actor: Actor, extra_namespace: str) -> str:
    return await delete_object(actor, "ResourceQuota", extra_namespace, QUOTA_NAME)


#: The cluster's default StorageClass (chaoskube.cluster.DEFAULT_STORAGE_CLASS) and its provisioner.
BASE_STORAGE_CLASS = "standard"
ZONAL_PROVISIONER = "chaoskube.io/zonal-disk"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def storage_class_object(reclaim: str) -> Any:
    """The generator's StorageClass ``generator-<reclaim>``: zonal disks bound where their
    first pod lands (WaitForFirstConsumer), reclaimed as ``reclaim`` says."""
    return from_dict({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                      "metadata": {"name": f"generator-{reclaim.lower()}", "labels": {GENERATOR_LABEL: "true"}},
                      "provisioner": ZONAL_PROVISIONER, "reclaimPolicy": reclaim, "volumeBindingMode": "WaitForFirstConsumer"})


async def _set_default_storage_class(actor: Actor, reclaim: str) -> str:
    """``kubectl create storageclass`` (when missing) and ``kubectl annotate storageclass
    ... storageclass.kubernetes.io/is-default-class=true``, the other classes' annotation set
    false first ("Change the default StorageClass",
    https://kubernetes.io/docs/tasks/administer-cluster/change-default-storage-class/): claims
    created from then on without a class -- a StatefulSet member's, after a scale-up -- get
    the new default's reclaim policy."""
    wanted = storage_class_object(reclaim)
    before = len(actor.ops)
    if await actor.call(f"create storageclass {wanted.metadata.name}", actor.client.create, wanted) is None and actor.ops[-1][1] == 409:
        del actor.ops[before:]  # AlreadyExists: only the annotation changes
    for name in (BASE_STORAGE_CLASS, *(f"generator-{other.lower()}" for other in ARG_CHOICES["reclaim"] if other != reclaim)):
        before = len(actor.ops)
        if await actor.call(f"annotate storageclass {name} default=false", actor.client.patch, "storageclasses", "", name, {"metadata": {"annotations": {DEFAULT_CLASS_ANNOTATION: "false"}}}) is None and actor.ops[-1][1] == 404:
            del actor.ops[before:]  # not made yet
    await actor.call(f"annotate storageclass {wanted.metadata.name} default=true", actor.client.patch, "storageclasses", "", wanted.metadata.name, {"metadata": {"annotations": {DEFAULT_CLASS_ANNOTATION: "true"}}})
    return actor.outcome()


async def _delete_claim(actor: Actor, index: int) -> str:
    """``kubectl delete pvc`` of a claim no live pod mounts (a StatefulSet member's left
    behind by a scale-down, the default retention policy), the ``index``-th of them by
    namespace and name: its volume is reclaimed as its policy says, and a later scale-up
    makes a new claim of the same name, which must not get the old volume."""
    claims = await actor.call("list persistentvolumeclaims -A", actor.client.list, "persistentvolumeclaims", "")
    pods = await actor.call("list pods -A", actor.client.list, "pods", "")
    if not claims or not pods:
        return actor.outcome()
    from chaoskube.api.workloads import volume_references

    mounted = {(pod.metadata.namespace, reference.name) for pod in pods.items
               for reference in volume_references(pod.spec.volumes) if reference.kind == "persistentvolumeclaim"}
    unused = sorted((claim.metadata.namespace, claim.metadata.name) for claim in claims.items
                    if claim.metadata.deletion_timestamp is None and (claim.metadata.namespace, claim.metadata.name) not in mounted)
    if not unused:
        return _none(actor, "unused PersistentVolumeClaim")
    return await delete_object(actor, "PersistentVolumeClaim", *unused[index % len(unused)])


async def _set_partition(actor: Actor, index: int, partition: int) -> str:
    """``kubectl patch statefulset -p '{"spec":{"updateStrategy":...{"partition":N}}}'``: a
    staged rollout moved on (or held back)."""
    key = await pick(actor, "StatefulSet", index)
    if key is None:
        return _none(actor, "StatefulSet")
    patch = {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}}}
    await actor.call(f"set partition statefulset {key[0]}/{key[1]}", actor.client.patch, "statefulsets", key[0], key[1], patch)
    return actor.outcome()


async def _restart_member(actor: Actor, index: int) -> str:
    """``kubectl delete pod <set>-<n>``: a StatefulSet member restarted (its identity and
    claim must come back, below a partition at the old revision)."""
    return await delete_pod(actor, "", index, "apps.kubernetes.io/pod-index")


#: The generator's CustomResourceDefinition (``create_custom_resource``): defaults,
#: validation and a status subresource, one served storage version (v1) and a retired one
#: (v1alpha1, ``served: false``: kept in the CRD, as the versioning docs' removal steps
#: leave a version "no longer served" before it is dropped).
WIDGETS = "widgets.churn.chaoskube.io"
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": WIDGETS, "labels": {GENERATOR_LABEL: "true"}},
    "spec": {
        "group": "churn.chaoskube.io", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{"name": "v1alpha1", "served": False, "storage": False, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}},
            {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                    "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
                    "options": {"type": "object", "default": {}, "properties": {"verbose": {"type": "boolean", "default": False}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                }},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
            },
        }}}],
    },
}
#: How long ``create_custom_resource`` waits for a CRD it created to be Established.
ESTABLISH_POLLS = 10
ESTABLISH_POLL_S = 0.5
#: Each shape's spec, the code the API server must refuse it with (None: it must store it;
#: 422: the schema's validation; 404: a version the CRD does not serve), and the version it
#: addresses ("": the storage version, named by no URL).
CUSTOM_SHAPES: dict[str, tuple[dict[str, Any], int | None, str]] = {
    "valid": ({"size": 3, "color": "red", "options": {"verbose": True, "labels": {"team": "a"}}}, None, ""),
    "defaulted": ({"size": 1}, None, ""),  # color, options and options.verbose from the defaults
    "unknown-field": ({"size": 2, "shape": "round", "options": {"legacy": 1}}, None, ""),  # pruned
    "invalid-range": ({"size": 11}, 422, ""),
    "invalid-enum": ({"size": 2, "color": "purple"}, 422, ""),
    "missing-required": ({"color": "blue"}, 422, ""),
    # an old client still at the retired version (lensapp/lens#3592: a client asking for the
    # first listed version, no longer served): upstream's crdHandler answers 404
    "retired-version": ({"size": 2}, 404, "v1alpha1"),
}


async def _create_custom_resource(actor: Actor, custom_shape: str, namespace: str, slot: int) -> str:
    """``kubectl apply`` of the generator's CRD (when it is not there yet) and ``kubectl
    create`` of a Widget of ``custom_shape``: the valid ones are stored pruned and defaulted,
    the invalid ones must be refused with 422 Invalid
    (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation),
    one at the retired version v1alpha1 with 404 NotFound (upstream's ``crdHandler`` serves
    only versions marked ``served``: ``customresource_handler.go``).
    A CRD it creates is waited for until Established (``kubectl wait --for
    condition=established``, at most 5 s: the CRD handler serves Widgets only then); an
    invalid Widget accepted is reported as such."""
    from chaoskube.api.objects import ObjectMeta, custom_type

    present = await actor.call(f"get customresourcedefinition {WIDGETS}", actor.client.get, "customresourcedefinitions", "", WIDGETS)
    if not present:
        actor.ops.clear()
        if not await actor.call(f"create customresourcedefinition {WIDGETS}", actor.client.create, from_dict(WIDGET_CRD)):
            return actor.outcome()
        # kubectl wait --for condition=established: the CRD handler serves Widgets only then
        for _ in range(ESTABLISH_POLLS):
            await actor.client.process.sleep(ESTABLISH_POLL_S)
            found = await actor.call(f"get customresourcedefinition {WIDGETS}", actor.client.get, "customresourcedefinitions", "", WIDGETS)
            if found and any(condition.type == "Established" and condition.status == "True" for condition in found.status.conditions):
                break
        else:
            return actor.outcome("created the CRD; not Established yet")
    spec, refused, version = CUSTOM_SHAPES[custom_shape]
    name = f"{custom_shape}-{slot}"
    widget = custom_type(f"churn.chaoskube.io/{version or 'v1'}", "Widget", WIDGETS, True)(
        metadata=ObjectMeta(name=name, namespace=namespace, labels={GENERATOR_LABEL: "true"}), content={"spec": copy.deepcopy(spec)})
    what = f"create widget {namespace}/{name}"
    with actor.client.process.move_on_after(actor.op_timeout_s) as scope:
        try:
            await actor.client.create(widget, version=version)
        except ApiError as error:
            if refused is not None and error.code == refused:
                actor._op(what, 200, "")
                return f"ok: refused {refused} as expected"
            actor._op(what, error.code, error.reason)
            return actor.outcome()
    if scope.cancelled_caught:
        actor._op(what, None, "op_timeout_s passed")
        return actor.outcome()
    actor._op(what, 200, "")
    if refused is not None:
        return f"error: a Widget ({custom_shape}) the API server must refuse with {refused} was accepted"
    return actor.outcome()


# ============================================================================ the table
@dataclass(frozen=True, slots=True)
class Action:
    """One action of :data:`ACTIONS`: its name, the arguments it draws (names of
    :data:`ARG_CHOICES`) and what it does."""

    name: str
    args: tuple[str, ...]
    run: Callable[..., Awaitable[str]]
    doc: str


async def pick(actor: Actor, kind: str, index: int) -> tuple[str, str] | None:
    """(namespace, name) of the ``index``-th (modulo their number) object of ``kind`` the
    generator created, in any namespace, not being deleted, by namespace and name; None when
    there is none (or the list failed). Picking among what exists, as a user acts on what
    ``kubectl get -A`` shows, keeps the plan a pure function of the seed while its actions
    meet real objects."""
    listed = await actor.call(f"list {_resource(kind)}", actor.client.list, _resource(kind), "", label_selector=f"{GENERATOR_LABEL}=true")
    if not listed:
        return None
    keys = sorted((obj.metadata.namespace, obj.metadata.name) for obj in listed.items if obj.metadata.deletion_timestamp is None)
    return keys[index % len(keys)] if keys else None


def _none(actor: Actor, kind: str) -> str:
    return actor.outcome(f"skipped: no {kind}")


async def _create(actor: Actor, kind: str, namespace: str, slot: int, replicas: int) -> str:
    return await create_workload(actor, kind, namespace, object_name(kind, slot), replicas, cpu=POD_CPU, generated=True)


async def _scale(actor: Actor, scalable_kind: str, index: int, replicas: int) -> str:
    key = await pick(actor, scalable_kind, index)
    return await scale_workload(actor, scalable_kind, *key, replicas) if key else _none(actor, scalable_kind)


async def _update(actor: Actor, rollable_kind: str, index: int, change: str) -> str:
    key = await pick(actor, rollable_kind, index)
    return await update_workload(actor, rollable_kind, *key, change) if key else _none(actor, rollable_kind)


async def _undo(actor: Actor, index: int) -> str:
    key = await pick(actor, "Deployment", index)
    return await undo_deployment(actor, *key) if key else _none(actor, "Deployment")


async def _delete(actor: Actor, kind: str, index: int, propagation: str) -> str:
    key = await pick(actor, kind, index)
    return await delete_object(actor, kind, *key, propagation) if key else _none(actor, kind)


async def _create_pdb(actor: Actor, kind: str, index: int, budget: str) -> str:
    """A budget for an existing workload of ``kind``, named after it (selecting its pods)."""
    key = await pick(actor, kind, index)
    return await create_pdb(actor, *key, budget, generated=True) if key else _none(actor, kind)


async def _change_pdb(actor: Actor, index: int, budget: str) -> str:
    key = await pick(actor, "PodDisruptionBudget", index)
    return await change_pdb(actor, *key, budget) if key else _none(actor, "PodDisruptionBudget")


async def _delete_pdb(actor: Actor, index: int) -> str:
    key = await pick(actor, "PodDisruptionBudget", index)
    return await delete_object(actor, "PodDisruptionBudget", *key) if key else _none(actor, "PodDisruptionBudget")


async def _delete_pod(actor: Actor, index: int) -> str:
    return await delete_pod(actor, "", index)


async def _evict_pod(actor: Actor, index: int) -> str:
    return await evict_pod(actor, "", index)


async def _cordon(actor: Actor, index: int) -> str:
    return await cordon(actor, index)


async def _uncordon(actor: Actor, index: int) -> str:
    return await cordon(actor, index, unschedulable=False)


async def _drain(actor: Actor, index: int) -> str:
    return await drain(actor, index)


async def _create_namespace(actor: Actor, extra_namespace: str) -> str:
    return await create_namespace(actor, extra_namespace)


async def _delete_namespace(actor: Actor, extra_namespace: str) -> str:
    return await delete_namespace(actor, extra_namespace)


async def _label_node(actor: Actor, index: int, pool: str) -> str:
    return await label_node(actor, index, pool)


async def _taint_node(actor: Actor, index: int, effect: str) -> str:
    return await taint_node(actor, index, effect)


async def _untaint_node(actor: Actor, index: int) -> str:
    return await taint_node(actor, index, "")


#: The generator's actions (and the machine's generic rules), by name.
ACTIONS: dict[str, Action] = {action.name: action for action in (
    Action("create_workload", ("kind", "namespace", "slot", "replicas"), _create, "kubectl create a workload of any kind"),
    Action("scale_workload", ("scalable_kind", "index", "replicas"), _scale, "kubectl scale a Deployment, StatefulSet or ReplicaSet"),
    Action("update_workload", ("rollable_kind", "index", "change"), _update, "kubectl rollout restart / set image"),
    Action("undo_rollout", ("index",), _undo, "kubectl rollout undo deployment"),
    Action("delete_workload", ("kind", "index", "propagation"), _delete, "kubectl delete --cascade=background|foreground|orphan"),
    Action("create_pdb", ("kind", "index", "budget"), _create_pdb, "create a PodDisruptionBudget for a workload"),
    Action("change_pdb", ("index", "budget"), _change_pdb, "change a PodDisruptionBudget's budget"),
    Action("delete_pdb", ("index",), _delete_pdb, "delete a PodDisruptionBudget"),
    Action("delete_pod", ("index",), _delete_pod, "kubectl delete pod (no PDB)"),
    Action("evict_pod", ("index",), _evict_pod, "the Eviction API (PDB-guarded)"),
    Action("cordon", ("index",), _cordon, "kubectl cordon"),
    Action("uncordon", ("index",), _uncordon, "kubectl uncordon"),
    Action("drain", ("index",), _drain, "kubectl drain --ignore-daemonsets"),
    Action("create_namespace", ("extra_namespace",), _create_namespace, "kubectl create namespace"),
    Action("delete_namespace", ("extra_namespace",), _delete_namespace, "kubectl delete namespace"),
    Action("label_node", ("index", "pool"), _label_node, "kubectl label node"),
    Action("taint_node", ("index", "effect"), _taint_node, "kubectl taint node (NoSchedule / PreferNoSchedule)"),
    Action("untaint_node", ("index",), _untaint_node, "kubectl taint node KEY-"),
    Action("create_app_workload", ("app_shape", "namespace", "slot"), _create_app, "create a StatefulSet with claims or Parallel, an Indexed, failing or deadlined Job, a Replace or zoned CronJob"),
    Action("set_partition", ("index", "partition"), _set_partition, "move a StatefulSet's rolling update partition"),
    Action("restart_member", ("index",), _restart_member, "kubectl delete pod of a StatefulSet member"),
    Action("set_quota", ("extra_namespace", "quota_size"), _set_quota, "kubectl create quota (or apply a changed hard) in a churn namespace"),
    Action("delete_quota", ("extra_namespace",), _delete_quota, "kubectl delete quota"),
    Action("set_default_storage_class", ("reclaim",), _set_default_storage_class, "kubectl create storageclass (Retain or Delete) and make it the default"),
    Action("delete_claim", ("index",), _delete_claim, "kubectl delete pvc of a claim no pod mounts"),
    Action("create_custom_resource", ("custom_shape", "namespace", "slot"), _create_custom_resource, "create the generator's CRD, then valid, pruned, defaulted and invalid (422) custom resources, and one at its retired version (404)"),
)}


def draw_args(rng: random.Random, action: str) -> dict[str, Any]:
    """The arguments of ``action``, each drawn uniformly from :data:`ARG_CHOICES`, in the
    order the action lists them (so the draw is a pure function of ``rng``'s state)."""
    return {name: rng.choice(ARG_CHOICES[name]) for name in ACTIONS[action].args}


def strategy_values(action: str) -> dict[str, tuple[Any, ...]]:
    """The values each argument of ``action`` takes (for a Hypothesis ``sampled_from``)."""
    return {name: ARG_CHOICES[name] for name in ACTIONS[action].args}

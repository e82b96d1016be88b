"""Gallery (broken): a replica's claim deleted only when the deletion of its ConfigMap is
*observed*.

Each Widget has, per replica I, a ConfigMap ``NAME-cm-I`` and a claim ``NAME-data-I``. The
reconcile converges the ConfigMaps to ``replicas``; a claim is deleted when the operator
sees the DELETED event of its replica's ConfigMap (and once at start, for whatever went
while it was down). A watch that breaks and is resumed by a fresh list (410 Expired: the
history moved on) never delivers that event: the claim stays, with no replica (its volume
allocated for nothing, and a later scale-up reuses stale data). Modelled on
instaclustr/cassandra-operator#398 (the controller deleted a PVC only when it saw the pod
with a deletionTimestamp; when it saw the pod's deletion without that state the PVC
stayed), reported by Sieve's authors as an *unobserved-state* bug (Sun et al., OSDI 2022,
§4.3). Fixed: cleanup_on_observed_delete_fixed.py (the claims are converged with the
ConfigMaps, level-triggered, from what is there).
"""

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "gallery.chaoskube.dev", "v1", "widgets"
LEVEL_TRIGGERED = False


@kopf.on.startup()
def configure(settings, **_):
    kubernetes.config.load_kube_config()
    settings.posting.enabled = False
    # A watch stream that goes silent (a partition: no reset, no answer) is given up on and
    # opened again, as kopf's documentation advises; without these kopf waits on it for ever.
    settings.watching.server_timeout = 10
    settings.watching.client_timeout = 15
    settings.networking.request_timeout = 15


def _ensure(create, body):
    try:
        create(body)
    except kubernetes.client.ApiException as error:
        if error.status != 409:
            raise


def _delete(delete, name, namespace):
    try:
        delete(name, namespace)
    except kubernetes.client.ApiException as error:
        if error.status != 404:
            raise


@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=1)
def sweep(name, namespace, **_):
    """At start: the claims whose ConfigMap went while the operator was down."""
    core = kubernetes.client.CoreV1Api()
    replicas = {cm.metadata.name.rsplit("-", 1)[1] for cm in core.list_namespaced_config_map(namespace, label_selector=f"widget={name}").items}
    for claim in core.list_namespaced_persistent_volume_claim(namespace, label_selector=f"widget={name}").items:
        if claim.metadata.name.rsplit("-", 1)[1] not in replicas:
            _delete(core.delete_namespaced_persistent_volume_claim, claim.metadata.name, namespace)


@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=1)
@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec", backoff=1)
def reconcile(name, namespace, spec, uid, **_):
    core = kubernetes.client.CoreV1Api()
    want = int(spec.get("replicas", 1))
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": uid, "controller": True}
    labels = {"widget": name}
    for index in range(want):
        meta = lambda child: {"name": child, "labels": labels, "ownerReferences": [owner]}  # noqa: E731
        _ensure(lambda body: core.create_namespaced_config_map(namespace, body), {"metadata": meta(f"{name}-cm-{index}"), "data": {"image": spec.get("image", "")}})
        _ensure(lambda body: core.create_namespaced_persistent_volume_claim(namespace, body), {"metadata": meta(f"{name}-data-{index}"), "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    for cm in core.list_namespaced_config_map(namespace, label_selector=f"widget={name}").items:
        if int(cm.metadata.name.rsplit("-", 1)[1]) >= want:
            _delete(core.delete_namespaced_config_map, cm.metadata.name, namespace)
    if LEVEL_TRIGGERED:
        for claim in core.list_namespaced_persistent_volume_claim(namespace, label_selector=f"widget={name}").items:
            if int(claim.metadata.name.rsplit("-", 1)[1]) >= want:
                _delete(core.delete_namespaced_persistent_volume_claim, claim.metadata.name, namespace)


@kopf.on.event("", "v1", "configmaps", labels={"widget": kopf.PRESENT})
def replica_gone(type, name, namespace, **_):
    """The DELETED event of a replica's ConfigMap: its claim goes with it."""
    if type == "DELETED" and not LEVEL_TRIGGERED:
        widget, _, index = name.rpartition("-cm-")
        _delete(kubernetes.client.CoreV1Api().delete_namespaced_persistent_volume_claim, f"{widget}-data-{index}", namespace)

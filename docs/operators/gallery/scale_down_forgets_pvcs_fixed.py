"""Gallery (fixed): scale_down_forgets_pvcs.py deleting each replica's claim with its
ConfigMap on a scale-down."""

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "gallery.chaoskube.dev", "v1", "widgets"


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
            core.delete_namespaced_config_map(cm.metadata.name, namespace)
    for claim in core.list_namespaced_persistent_volume_claim(namespace, label_selector=f"widget={name}").items:
        if int(claim.metadata.name.rsplit("-", 1)[1]) >= want:
            core.delete_namespaced_persistent_volume_claim(claim.metadata.name, namespace)

"""Gallery (fixed): delete_not_idempotent.py taking 404 NotFound on a delete as done, so a
reconcile run again after a lost answer finishes."""

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


def _delete(core, name, namespace):
    try:
        core.delete_namespaced_config_map(name, namespace)
    except kubernetes.client.ApiException as error:
        if error.status != 404:
            raise


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.replicas", backoff=1)
def scale(name, namespace, uid, spec, old, new, **_):
    core = kubernetes.client.CoreV1Api()
    want = int(spec.get("replicas", 1))
    before = int(old) if isinstance(old, int) else 0
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": uid, "controller": True}
    for index in range(before, want):
        try:
            core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-cm-{index}", "labels": {"widget": name}, "ownerReferences": [owner]}, "data": {}})
        except kubernetes.client.ApiException as error:
            if error.status != 409:
                raise
    for index in range(want, before):
        _delete(core, f"{name}-cm-{index}", namespace)

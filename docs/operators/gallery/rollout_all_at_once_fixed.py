"""Gallery (fixed): rollout_all_at_once.py updating each replica in place, one at a time, so
the Widget never has fewer replicas during an image change."""

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


def _create(core, namespace, name, index, image, uid):
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": uid, "controller": True}
    try:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-cm-{index}", "labels": {"widget": name}, "ownerReferences": [owner]}, "data": {"image": image}})
    except kubernetes.client.ApiException as error:
        if error.status != 409:
            raise


def _delete(core, namespace, child):
    try:
        core.delete_namespaced_config_map(child, namespace)
    except kubernetes.client.ApiException as error:
        if error.status != 404:
            raise


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.replicas", backoff=1)
def scale(name, namespace, uid, spec, **_):
    core = kubernetes.client.CoreV1Api()
    want = int(spec.get("replicas", 1))
    for index in range(want):
        _create(core, namespace, name, index, spec.get("image", ""), uid)
    for cm in core.list_namespaced_config_map(namespace, label_selector=f"widget={name}").items:
        if int(cm.metadata.name.rsplit("-", 1)[1]) >= want:
            _delete(core, namespace, cm.metadata.name)


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.image", backoff=1)
def roll(name, namespace, uid, spec, **_):
    core = kubernetes.client.CoreV1Api()
    for cm in core.list_namespaced_config_map(namespace, label_selector=f"widget={name}").items:
        core.patch_namespaced_config_map(cm.metadata.name, namespace, {"data": {"image": spec.get("image", "")}})

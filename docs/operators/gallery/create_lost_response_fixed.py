"""Gallery (fixed): create_lost_response.py with an idempotent create -- a deterministic
name, and 409 AlreadyExists taken as done."""

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


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
def create_config(name, namespace, body, **_):
    core = kubernetes.client.CoreV1Api()
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": body["metadata"]["uid"], "controller": True}
    try:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-config", "labels": {"widget": name}, "ownerReferences": [owner]}, "data": {"image": body["spec"].get("image", "")}})
    except kubernetes.client.ApiException as error:
        if error.status != 409:
            raise

"""Gallery (broken): a deletion missed because the operator holds no finalizer.

The operator keeps a registry (the ConfigMap ``widget-registry``: one key per Widget) and
removes a Widget's entry when it sees the Widget's DELETED event. Without a finalizer,
nothing holds the Widget until the operator has seen it go: if the operator is down (or
cut off) when the deletion commits, the object is gone by the time it lists again, no
DELETED event ever comes, and the entry stays for ever. The class Sieve reports as
*unobserved-state* bugs (sieve-project/sieve bugs.md: instaclustr/cassandra-operator#398,
Orange-OpenSource/casskop#342, rabbitmq/cluster-operator#758). Fixed:
delete_without_finalizer_fixed.py (kopf's on.delete handler, which adds a finalizer).
"""

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "gallery.chaoskube.dev", "v1", "widgets"
REGISTRY = "widget-registry"


@kopf.on.startup()
def configure(settings, **_):
    kubernetes.config.load_kube_config()
    settings.posting.enabled = False
    # A watch stream that goes silent (a partition: no reset, no answer) is given up on and
    # opened again, as kopf's documentation advises; without these kopf waits on it for ever.
    settings.watching.server_timeout = 10
    settings.watching.client_timeout = 15
    settings.networking.request_timeout = 15


def _registry(namespace, name, value):
    core = kubernetes.client.CoreV1Api()
    try:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": REGISTRY}, "data": {}})
    except kubernetes.client.ApiException as error:
        if error.status != 409:
            raise
    core.patch_namespaced_config_map(REGISTRY, namespace, {"data": {name: value}})


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
@kopf.on.update(GROUP, VERSION, PLURAL, backoff=1)
@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=1)
def register(name, namespace, spec, **_):
    _registry(namespace, name, str(spec.get("image", "")))


@kopf.on.event(GROUP, VERSION, PLURAL)
def forget(event, name, namespace, **_):
    if event["type"] == "DELETED":
        _registry(namespace, name, None)  # a merge patch with null removes the key

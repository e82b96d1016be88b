"""Gallery (broken): a create that is not idempotent when its response is lost.

Each Widget gets one ConfigMap, created with ``generateName``. When the answer to the
create is lost (the write committed), the handler fails and kopf retries it: a second
ConfigMap. Modelled on Sieve's intermediate-state bugs where a controller re-creates a
resource after a crash between its write and its bookkeeping (e.g. instaclustr
cassandra-operator #402; see docs/operators.md, "The gallery"). Fixed:
create_lost_response_fixed.py.
"""

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
    core.create_namespaced_config_map(namespace, {"metadata": {"generateName": f"{name}-config-", "labels": {"widget": name}, "ownerReferences": [owner]}, "data": {"image": body["spec"].get("image", "")}})

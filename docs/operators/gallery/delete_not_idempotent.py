"""Gallery (broken): a delete that is not idempotent when its answer is lost.

Each Widget has ``replicas`` ConfigMaps ``NAME-cm-I``. A scale-down deletes the ConfigMaps
from the new count up to the old one, as the change says. When a delete commits but its
answer is lost, kopf runs the handler again: the same delete now answers 404 NotFound, the
handler fails again, and so on for ever -- the Widget's change is never marked handled and
the ConfigMaps after it are never deleted. Of the class Sieve lists as *intermediate-state*
bugs, where a reconcile re-run after an interruption trips over its own earlier writes
(sieve-project/sieve bugs.md: K8SSAND-1023, Orange-OpenSource/casskop#370). Fixed:
delete_not_idempotent_fixed.py (404 on a delete is done).
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


def _delete(core, name, namespace):
    core.delete_namespaced_config_map(name, namespace)


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

"""Gallery (broken): status written from stale data.

Each Widget has ``replicas`` ConfigMaps ``NAME-cm-I``; the operator reports how many in
``status.children``. It computes the new count from the count it read with the object
(``status.children`` + created - deleted) instead of from the world: when a reconcile is
cut short after its writes (a crash, a lost answer) and run again, the second run creates
nothing, and the status no longer matches the children. Of the class Sieve lists as
*intermediate-state* bugs (sieve-project/sieve bugs.md: K8SPSMDB-578, K8SPXC-896: a
reconcile interrupted between two of its writes leaves what it reports wrong). Fixed:
status_from_stale_read_fixed.py (the status is the count of the children listed).
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
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec", backoff=1)
def reconcile(name, namespace, spec, status, uid, patch, **_):
    core = kubernetes.client.CoreV1Api()
    want = int(spec.get("replicas", 1))
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": uid, "controller": True}
    have = {cm.metadata.name for cm in core.list_namespaced_config_map(namespace, label_selector=f"widget={name}").items}
    created = deleted = 0
    for index in range(want):
        child = f"{name}-cm-{index}"
        if child not in have:
            core.create_namespaced_config_map(namespace, {"metadata": {"name": child, "labels": {"widget": name}, "ownerReferences": [owner]}, "data": {}})
            created += 1
    for child in sorted(have):
        if int(child.rsplit("-", 1)[1]) >= want:
            core.delete_namespaced_config_map(child, namespace)
            deleted += 1
    patch.status["children"] = int(status.get("children", 0)) + created - deleted

"""Gallery (broken): deletion decided from an in-memory view that a restart empties.

Each Widget has ``replicas`` ConfigMaps ``NAME-cm-I``. The operator remembers the Widgets
it has seen created (``KNOWN``) and, after each reconcile, sweeps away every labelled
ConfigMap whose Widget it does not know. A restart empties ``KNOWN`` (kopf does not call
``on.create`` again for objects that already exist), so the next sweep deletes the
children of live Widgets. The class Sieve reports as *intermediate-state* and
*stale-state* bugs, where a decision to delete is taken from a view that is not the
cluster's (sieve-project/sieve bugs.md: K8SPSMDB-430, pravega/zookeeper-operator#312,
elastic/cloud-on-k8s#5249). Fixed: memory_lost_on_restart_fixed.py (the view is rebuilt
on resume, and the sweep asks the API).
"""

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "gallery.chaoskube.dev", "v1", "widgets"
KNOWN = set()


@kopf.on.startup()
def configure(settings, **_):
    kubernetes.config.load_kube_config()
    settings.posting.enabled = False
    # A watch stream that goes silent (a partition: no reset, no answer) is given up on and
    # opened again, as kopf's documentation advises; without these kopf waits on it for ever.
    settings.watching.server_timeout = 10
    settings.watching.client_timeout = 15
    settings.networking.request_timeout = 15


def _children(namespace, name, spec, uid):
    core = kubernetes.client.CoreV1Api()
    want = int(spec.get("replicas", 1))
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": uid, "controller": True}
    have = {cm.metadata.name for cm in core.list_namespaced_config_map(namespace, label_selector=f"widget={name}").items}
    for index in range(want):
        child = f"{name}-cm-{index}"
        if child not in have:
            try:
                core.create_namespaced_config_map(namespace, {"metadata": {"name": child, "labels": {"widget": name, "gallery": "yes"}, "ownerReferences": [owner]}, "data": {"image": spec.get("image", "")}})
            except kubernetes.client.ApiException as error:
                if error.status != 409:
                    raise
    for child in sorted(have):
        if int(child.rsplit("-", 1)[1]) >= want:
            core.delete_namespaced_config_map(child, namespace)


def _sweep(namespace):
    core = kubernetes.client.CoreV1Api()
    for cm in core.list_namespaced_config_map(namespace, label_selector="gallery=yes").items:
        if cm.metadata.labels.get("widget") not in KNOWN:
            core.delete_namespaced_config_map(cm.metadata.name, namespace)


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
def created(name, namespace, spec, uid, **_):
    KNOWN.add(name)
    _children(namespace, name, spec, uid)
    _sweep(namespace)


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec", backoff=1)
def updated(name, namespace, spec, uid, **_):
    _children(namespace, name, spec, uid)
    _sweep(namespace)


@kopf.on.delete(GROUP, VERSION, PLURAL, backoff=1)
def deleted(name, **_):
    KNOWN.discard(name)

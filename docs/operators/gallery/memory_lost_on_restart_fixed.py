"""Gallery (fixed): memory_lost_on_restart.py with the view rebuilt on resume (kopf calls
``on.resume`` for every existing Widget after a restart) and a sweep that asks the API
whether a child's Widget exists before deleting it. (No ``on.delete`` handler: the view
need not forget a deleted Widget, since the sweep asks the API -- and kopf's finalizer is
where test-operator finds a gap in kopf itself; see delete_without_finalizer_fixed.py.)"""

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
    custom = kubernetes.client.CustomObjectsApi()
    live = {item["metadata"]["name"] for item in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]}
    for cm in core.list_namespaced_config_map(namespace, label_selector="gallery=yes").items:
        if cm.metadata.labels.get("widget") not in KNOWN and cm.metadata.labels.get("widget") not in live:
            core.delete_namespaced_config_map(cm.metadata.name, namespace)


@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=1)
def resumed(name, **_):
    KNOWN.add(name)


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
def created(name, namespace, spec, uid, **_):
    KNOWN.add(name)
    _children(namespace, name, spec, uid)
    _sweep(namespace)


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec", backoff=1)
def updated(name, namespace, spec, uid, **_):
    _children(namespace, name, spec, uid)
    _sweep(namespace)

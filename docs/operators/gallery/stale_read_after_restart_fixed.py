"""Gallery (fixed): stale_read_after_restart.py reading the Widget and its children with
quorum reads (no resourceVersion: served from etcd, never behind the change being handled),
as the fix of elastic/cloud-on-k8s#4956 proposes for reads that decide a deletion or a scale."""

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "gallery.chaoskube.dev", "v1", "widgets"
#: "": a quorum read, from etcd (the newest state).
READ_VERSION = ""


@kopf.on.startup()
def configure(settings, **_):
    kubernetes.config.load_kube_config()
    settings.posting.enabled = False
    # A watch stream that goes silent (a partition: no reset, no answer) is given up on and
    # opened again, as kopf's documentation advises; without these kopf waits on it for ever.
    settings.watching.server_timeout = 10
    settings.watching.client_timeout = 15
    settings.networking.request_timeout = 15


def _list(call, *args, **kwargs):
    if READ_VERSION:
        kwargs["resource_version"] = READ_VERSION
    return call(*args, **kwargs)


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec", backoff=1)
def reconcile(name, namespace, uid, logger, **_):
    core, custom = kubernetes.client.CoreV1Api(), kubernetes.client.CustomObjectsApi()
    widgets = _list(custom.list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL)["items"]
    widget = next((item for item in widgets if item["metadata"]["name"] == name), None)
    if widget is None:
        return
    want = int((widget.get("spec") or {}).get("replicas", 1))
    logger.info(f"reconciling {name}: {want} replica(s) (read at resourceVersion {widget['metadata']['resourceVersion']})")
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": uid, "controller": True}
    have = {cm.metadata.name for cm in _list(core.list_namespaced_config_map, namespace, label_selector=f"widget={name}").items}
    for index in range(want):
        child = f"{name}-cm-{index}"
        if child not in have:
            try:
                core.create_namespaced_config_map(namespace, {"metadata": {"name": child, "labels": {"widget": name}, "ownerReferences": [owner]}, "data": {}})
            except kubernetes.client.ApiException as error:
                if error.status != 409:
                    raise
    for child in sorted(have):
        if int(child.rsplit("-", 1)[1]) >= want:
            try:
                core.delete_namespaced_config_map(child, namespace)
            except kubernetes.client.ApiException as error:
                if error.status != 404:
                    raise

"""Gallery (broken): a reconcile that trusts the API server's cache after a restart.

Each Widget has ``replicas`` ConfigMaps ``NAME-cm-I``. Every handler reconciles as a
controller-runtime controller does: it reads the Widget again and lists its children
*from the cache* (``resourceVersion=0``: what a client-go informer lists with, answered by
the API server's watch cache, with no freshness guarantee) and converges the children to
the spec it read. Restarted against an API server whose watch cache lags, it reads a spec
older than the change it is handling, converges to that, and records the change as
handled: the children no longer follow the spec. Modelled on elastic/cloud-on-k8s#5274
(after a restart the operator connected to a stale API server that still showed
``count: 1`` and scaled the StatefulSet down) and yugabyte/yugabyte-operator#36, both
reported by Sieve's authors as *stale-state* ("time travel") bugs (Sun et al., OSDI 2022,
§4.2; kubernetes/kubernetes#59848). Fixed: stale_read_after_restart_fixed.py (quorum reads).
"""

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "gallery.chaoskube.dev", "v1", "widgets"
#: "0": served from the API server's watch cache, however far behind it is.
READ_VERSION = "0"


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

"""Gallery (fixed): delete_without_finalizer.py made level-triggered: it reconciles the
registry against the Widgets that exist (listed, not remembered) on every start, so a
deletion it missed while it was down is repaired when it comes back, and whenever it sees
the registry itself -- which includes every list of ConfigMaps its watch makes after a
broken watch whose resumption is refused (410 Expired), so a deletion whose DELETED event a
relist hid (an API server restarted with an empty watch cache; Sieve's unobserved state) is
repaired then. (Repaired on start only, the first version of this fix was found by
``test-operator --repeats 0``: ``apiserver-kill@user-delete:...#1`` and three
``unobserved-state`` plans left the entry of the deleted Widget.)

(kopf's ``on.delete`` handler, which puts a finalizer on every Widget, fixes it too -- but
``test-operator`` finds a liveness gap in kopf itself there: when the answer to kopf's own
finalizer JSON patch is lost, its retry fails the patch's resourceVersion test (422) and kopf
waits for a newer change that has already arrived, leaving the Widget unhandled until
something else changes it; kopf/_cogs/clients/patching.py. docs/operators.md, "The
gallery".)"""

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
    resync()


def resync():
    """Forget the registry entries of Widgets that no longer exist."""
    core = kubernetes.client.CoreV1Api()
    custom = kubernetes.client.CustomObjectsApi()
    try:
        live = {(item["metadata"]["namespace"], item["metadata"]["name"]) for item in custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]}
    except kubernetes.client.ApiException as error:
        if error.status == 404:  # the CRD is not there yet: nothing to repair
            return
        raise
    for registry in core.list_config_map_for_all_namespaces(field_selector=f"metadata.name={REGISTRY}").items:
        gone = [name for name in (registry.data or {}) if (registry.metadata.namespace, name) not in live]
        if gone:
            core.patch_namespaced_config_map(REGISTRY, registry.metadata.namespace, {"data": {name: None for name in gone}})


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
        _registry(namespace, name, None)


@kopf.on.event("", "v1", "configmaps", when=lambda name, **_: name == REGISTRY)
def reconcile(**_):
    """Any event of a registry -- a change, or its listing (event type None) after a watch
    that could not be resumed -- reconciles every registry with the Widgets that exist."""
    resync()

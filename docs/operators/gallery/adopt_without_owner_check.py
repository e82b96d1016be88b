"""Gallery (broken): children adopted without an owner check.

Each Widget has one ConfigMap ``NAME-config``. When the operator starts (``on.resume``,
for every Widget that exists), it re-adopts its children by label: every ConfigMap
labelled ``widget=NAME`` gets the Widget as its controller owner -- including ConfigMaps
it never made (here the user's ``widget-1-notes``, shipped with the manifests), which the
garbage collector then deletes with the Widget. controller-runtime's ``SetControllerReference``
refuses an object another controller owns and a careful adoption checks the name too; the
class Sieve reports as *intermediate-state* bugs found after a restart
(sieve-project/sieve bugs.md: konpyutaika/nifikop#49, K8SPXC-897). Fixed:
adopt_without_owner_check_fixed.py (adopts only its own names, never an owned object).
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


def _owner(name, uid):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name, "uid": uid, "controller": True, "blockOwnerDeletion": True}


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=1)
def create_config(name, namespace, uid, spec, **_):
    core = kubernetes.client.CoreV1Api()
    try:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-config", "labels": {"widget": name}, "ownerReferences": [_owner(name, uid)]}, "data": {"image": spec.get("image", "")}})
    except kubernetes.client.ApiException as error:
        if error.status != 409:
            raise


@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=1)
def adopt(name, namespace, uid, **_):
    core = kubernetes.client.CoreV1Api()
    for cm in core.list_namespaced_config_map(namespace, label_selector=f"widget={name}").items:
        owners = cm.metadata.owner_references or []
        if not any(owner.uid == uid for owner in owners):
            core.patch_namespaced_config_map(cm.metadata.name, namespace, {"metadata": {"ownerReferences": [_owner(name, uid)]}})

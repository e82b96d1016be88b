"""PersistentVolume and PersistentVolumeClaim guarantees, judged from the store's history and
the journal: what the persistent volume controller (the binder and its provisioner) and the
scheduler's volume plugins promise about binding, placement and reclaiming.

The Kubernetes behaviour checked ("Persistent Volumes",
https://kubernetes.io/docs/concepts/storage/persistent-volumes/ -- Binding: "PVC to PV
binding is a one-to-one mapping, using a ClaimRef which is a bi-directional binding between
the PersistentVolume and the PersistentVolumeClaim"; Reclaiming: Retain "When the
PersistentVolumeClaim is deleted, the PersistentVolume still exists and the volume is
considered 'released'. But it is not yet available for another claim because the previous
claimant's data remains on the volume", Delete "deletion removes both the PersistentVolume
object from Kubernetes, as well as the associated storage asset"; "Storage Classes", Volume
Binding Mode: WaitForFirstConsumer "will delay the binding and provisioning of a
PersistentVolume until a Pod using the PersistentVolumeClaim is created. PersistentVolumes
will be selected or provisioned conforming to the topology that is specified by the Pod's
scheduling constraints", https://kubernetes.io/docs/concepts/storage/storage-classes/#volume-binding-mode;
kubernetes/kubernetes ``pkg/controller/volume/persistentvolume/pv_controller.go``
``syncUnboundClaim`` / ``syncBoundClaim`` / ``syncVolume`` / ``reclaimVolume``, and
``pkg/scheduler/framework/plugins/volumebinding``):

1. **One-to-one binding**, at every stored revision: no two claims are Bound
   (``status.phase``) to one volume (``spec.volumeName``) -- "Two claims are bound to the
   same volume, this one is bound incorrectly" is the controller's own ClaimMisbound
   event --, and a Bound claim's volume, while it exists, names that claim in its
   ``claimRef`` (namespace, name and, when both are set, uid): the controller writes the
   volume's ``claimRef`` first and the claim's ``volumeName`` after (``bind``), so a
   Bound claim whose volume points elsewhere is a double binding. A volume whose
   ``claimRef`` is empty under a Bound claim is not judged (upstream ``syncBoundClaim``
   binds it again: "claim is bound but volume has come unbound"). And a claim is bound to
   one volume: a volume whose ``claimRef`` names a live claim (uid) whose ``volumeName``
   is another volume -- a binding that lost a race, from a stale cache (kubernetes PR
   #25881) -- is unbound, released or deleted within ``bound_s`` of a healthy stretch
   (``syncVolume``: "the claim is bound elsewhere" -> ``unbindVolume`` or delete).
2. **Placement**: a pod that is bound to a node and not terminal runs only where each of
   its claims' volumes allows: the volume's ``spec.nodeAffinity.required`` matches the node
   as stored at that revision -- judged when the pod is bound, and when one of its claims
   becomes Bound while it is on a node. (The ``scheduling`` checker judges the scheduler's
   decision against what it saw; this judges the store, whoever wrote it.)
3. **WaitForFirstConsumer**: a claim of a WaitForFirstConsumer class that the controller
   binds (``pv.kubernetes.io/bound-by-controller`` on the claim and the volume) is bound
   only once the scheduler chose a node for it (``volume.kubernetes.io/selected-node``),
   and to a volume whose node affinity accepts that node: for a zonal disk, in the node's
   zone (aws-ebs-csi-driver#760 and pravega/zookeeper-operator#311 are volumes provisioned
   in another zone than the selected node's).
4. **Reclaim policy**, once the claim a volume was bound to (``claimRef.uid``) has left the
   store: the volume is never bound to another claim (its ``claimRef`` naming another uid)
   unless an administrator first cleared its ``claimRef`` -- "Volumes with Retain policy
   should stay Released forever and never get bound again" (kubernetes/kubernetes PR
   #24682) and the same holds for Delete, which removes it; with ``Retain`` the controller
   never deletes it (no ``volume`` ``deleted`` record) and it turns Released; with
   ``Delete`` it leaves the store (or is marked for deletion). Both within ``bound_s``
   (30 s: the controller acts on the claim's deletion event, and resyncs every
   ``--pvclaimbinder-sync-period``, 15 s) of a stretch in which a kube-controller-manager
   led and no fault touched the control plane or it (:func:`run_health`).

5. **Storage object in use protection**: a claim never leaves the store while a pod in the
   store that names it (``persistentVolumeClaim.claimName``) is bound to a node, whatever
   its phase (a finished pod holds its claims too: ``podUsesPVC`` asks only
   ``pod.Spec.NodeName != ""`` for such a volume; only a generic ephemeral volume's claim is
   let go once its pod is shut down, ``podIsShutDown``), if that pod was bound before the
   claim was marked for deletion and the claim carried ``kubernetes.io/pvc-protection`` then
   ("PVC is in active use by a Pod when a Pod object exists that is using the PVC",
   https://kubernetes.io/docs/concepts/storage/persistent-volumes/#storage-object-in-use-protection;
   ``pkg/controller/volume/pvcprotection/pvc_protection_controller.go`` ``isBeingUsed``:
   the informer, then a live list, as kubernetes/kubernetes#75980 and #76703 asked, fixed
   by PR #80492). A pod bound after the mark is not judged: the controller's live list may
   have been read before it (upstream leaves that race to the kubelet, which does not
   start a pod whose claim is being deleted).

``check_volume_invariants(events)`` answers False with the first finding (evidence: the
change and what the rule saw), unknown when the store never held a claim, True otherwise.
``details`` counts what was judged and what could not be (``unjudged``: a pod whose node or
claim or volume was not in the store, a claim whose class was not, a volume pre-bound by a
user, a reclaim deadline the control plane never had a healthy stretch for).

Bounds: ``bound_s`` (30 s) for the reclaim reaction and for letting go of a volume bound
to a claim bound elsewhere. Limits: a node relabelled under a running pod is not judged
again (``IgnoredDuringExecution``); a volume pre-bound by a user (no bound-by-controller
annotation) is left out of rule 3; ``Recycle`` is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from chaoskube.checkers.replay import RunHealth, StoreReplay, run_health
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_volume_invariants"]

Event = dict[str, Any]
Obj = dict[str, Any]

BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: The reclaim reaction's bound (module docstring, rule 4).
BOUND_S = 30.0
RESOURCES = ("persistentvolumes", "persistentvolumeclaims", "pods", "nodes", "storageclasses")


def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def _uid(obj: Obj | None) -> str:
    return str(_meta(obj).get("uid") or "")


def _bound_to(claim: Obj | None) -> str:
    """The volume a claim is Bound to ('' while it is not)."""
    if claim is None or ((claim.get("status") or {}).get("phase")) != "Bound":
        return ""
    return str((claim.get("spec") or {}).get("volumeName") or "")


def _claim_ref(volume: Obj | None) -> Obj | None:
    return ((volume or {}).get("spec") or {}).get("claimRef") or None


def _ref_names(reference: Obj, key: str, uid: str) -> bool:
    """Whether a ``claimRef`` names the claim ``key`` (``namespace/name``) of ``uid``."""
    if f"{reference.get('namespace', '')}/{reference.get('name', '')}" != key:
        return False
    return not reference.get("uid") or not uid or reference.get("uid") == uid


def _accepts(volume: Obj, node_name: str, node: Obj) -> bool | None:
    """Whether the volume's ``nodeAffinity.required`` matches the node (None: unparseable)."""
    from chaoskube.api.manifests import ManifestError, from_dict
    from chaoskube.api.workloads import node_selector_matches

    required = (((volume.get("spec") or {}).get("nodeAffinity")) or {}).get("required")
    if not required:
        return True
    try:
        typed = from_dict({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": _meta(volume).get("name", "pv")},
                           "spec": {"nodeAffinity": {"required": required}}})
        return node_selector_matches(typed.spec.node_affinity.required, node_name, _meta(node).get("labels") or {})
    except (ManifestError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _pod_claims(pod: Obj) -> list[str]:
    """The claims a pod mounts: ``persistentVolumeClaim.claimName``, and ``<pod>-<volume>``
    for a generic ephemeral volume."""
    names = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        claim = volume.get("persistentVolumeClaim")
        if claim and claim.get("claimName"):
            names.append(str(claim["claimName"]))
        elif volume.get("ephemeral") is not None:
            names.append(f"{_meta(pod).get('name', '')}-{volume.get('name', '')}")
    return names


def _uses_claim(pod: Obj, name: str) -> str:
    """The node of a pod that holds claim ``name`` in use (rule 5, ``podUsesPVC``): bound to
    a node and naming it in a ``persistentVolumeClaim`` volume, whatever its phase, or as a
    generic ephemeral volume's claim while it runs; "" otherwise."""
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    if not node:
        return ""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        claim = volume.get("persistentVolumeClaim")
        if claim and claim.get("claimName") == name:
            return node
        if volume.get("ephemeral") is not None and f"{_meta(pod).get('name', '')}-{volume.get('name', '')}" == name and _running_on(pod):
            return node
    return ""


def _running_on(pod: Obj | None) -> str:
    if pod is None or ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed"):
        return ""
    return str((pod.get("spec") or {}).get("nodeName") or "")


class _Orphan:
    """A volume whose claim left the store: what rule 4 expects of it."""

    __slots__ = ("claim", "uid", "since", "policy", "deadline", "released_t", "gone_t")

    def __init__(self, claim: str, uid: str, since: float, policy: str, deadline: float) -> None:
        self.claim = claim
        self.uid = uid
        self.since = since
        self.policy = policy
        self.deadline = deadline
        self.released_t: float | None = None
        self.gone_t: float | None = None


def _deadline(health: RunHealth, since: float, bound: float, end_t: float) -> float:
    """The end of the first stretch of ``bound`` seconds from ``since`` on in which the
    controller-manager was healthy (infinite if none ended before ``end_t``)."""
    starts = {since}
    starts.update(end for _, end in health.faulty if end > since)
    starts.update(begin for begin, _ in health.led if begin > since)
    for start in sorted(starts):
        if start + bound > end_t:
            break
        if health.healthy(start, start + bound):
            return start + bound
    return math.inf


def check_volume_invariants(events: Sequence[Event], *, bound_s: float = BOUND_S) -> Verdict:
    """Judge the volume rules (module docstring)."""
    end_t = max((event.get("t", 0.0) for event in events), default=0.0)
    health = run_health(events, end_t, "kube-controller-manager")
    store = StoreReplay(RESOURCES)
    counts = {"claims": 0, "bindings_checked": 0, "placements_checked": 0, "wffc_bindings_checked": 0, "reclaims_checked": 0, "strays_checked": 0,
              "claim_removals_checked": 0}
    bound_at: dict[str, tuple[str, int]] = {}  # pod key -> (uid, the revision it was first bound to a node at)
    marked_at: dict[str, tuple[str, int, bool]] = {}  # claim key -> (uid, the revision it was marked for deletion at, protected then)
    unjudged: dict[str, int] = {}
    claim_uids: set[str] = set()
    volume_names: set[str] = set()
    gone_claims: dict[str, float] = {}  # uid -> when the claim left the store
    orphans: dict[str, _Orphan] = {}  # volume name -> its obligations
    finished: list[tuple[str, _Orphan]] = []  # orphans whose volume left the store
    cleared: set[tuple[str, str]] = set()  # (volume, released uid) an administrator reset
    strays: dict[str, tuple[float, str, str]] = {}  # volume -> (since, its claim, the claim's other volume)

    def skip(reason: str) -> None:
        unjudged[reason] = unjudged.get(reason, 0) + 1

    def found(rule: str, t: float, where: str, problem: str, evidence: dict[str, Any]) -> Verdict:
        details = {"rule": rule, **counts, "unjudged": dict(sorted(unjudged.items()))}
        return Verdict(False, problem, ({"rule": rule, "t": t, "object": where, "problem": problem, **evidence},), details)

    def check_binding(volume_name: str, t: float, revision: int) -> Verdict | None:
        if not volume_name:
            return None
        claims = sorted(key for key, claim in store.objects("persistentvolumeclaims").items() if _bound_to(claim) == volume_name)
        if not claims:
            return None
        counts["bindings_checked"] += 1
        if len(claims) > 1:
            return found("pv-double-bound", t, f"persistentvolumes/{volume_name}",
                         f"at revision {revision} (t={t:.3f}) claims {', '.join(claims)} are all Bound to PersistentVolume {volume_name}: PVC to PV binding is one-to-one",
                         {"revision": revision, "claims": claims})
        volume = store.get("persistentvolumes", volume_name)
        reference = _claim_ref(volume)
        if volume is None or reference is None:
            return None
        key = claims[0]
        claim = store.get("persistentvolumeclaims", key)
        if not _ref_names(reference, key, _uid(claim)):
            other = f"{reference.get('namespace', '')}/{reference.get('name', '')}"
            return found("claim-ref-mismatch", t, f"persistentvolumeclaims/{key}",
                         f"at revision {revision} (t={t:.3f}) claim {key} is Bound to PersistentVolume {volume_name}, whose claimRef names {other} (uid {reference.get('uid', '')!r}): the volume is bound to another claim",
                         {"revision": revision, "claim": key, "volume": volume_name, "claimRef": reference})
        return None

    def check_placement(pod_key: str, pod: Obj, t: float, revision: int) -> Verdict | None:
        node_name = _running_on(pod)
        if not node_name:
            return None
        namespace = pod_key.partition("/")[0]
        for claim_name in _pod_claims(pod):
            claim = store.get("persistentvolumeclaims", f"{namespace}/{claim_name}")
            volume_name = _bound_to(claim) or str(((claim or {}).get("spec") or {}).get("volumeName") or "")
            volume = store.get("persistentvolumes", volume_name) if volume_name else None
            node = store.get("nodes", node_name)
            if claim is None or volume is None or node is None:
                skip("placement: claim, volume or node not in the store")
                continue
            reference = _claim_ref(volume)
            if reference is None or not _ref_names(reference, f"{namespace}/{claim_name}", _uid(claim)):
                skip("placement: volume not (yet) bound to the claim")
                continue
            counts["placements_checked"] += 1
            accepted = _accepts(volume, node_name, node)
            if accepted is None:
                skip("placement: volume nodeAffinity not parseable")
            elif not accepted:
                return found("pod-volume-affinity", t, f"pods/{pod_key}",
                             f"at revision {revision} (t={t:.3f}) pod {pod_key} runs on {node_name} (labels {_zone_of(node)}), which the node affinity of its claim {claim_name}'s volume {volume_name} does not allow",
                             {"revision": revision, "pod": pod_key, "node": node_name, "claim": claim_name, "volume": volume_name,
                              "nodeAffinity": ((volume.get("spec") or {}).get("nodeAffinity"))})
        return None

    def check_wffc(key: str, claim: Obj, t: float, revision: int) -> Verdict | None:
        class_name = (claim.get("spec") or {}).get("storageClassName")
        if not class_name:
            return None
        storage_class = store.get("storageclasses", str(class_name))
        if storage_class is None:
            skip("wffc: storage class not in the store")
            return None
        if storage_class.get("volumeBindingMode") != "WaitForFirstConsumer":
            return None
        volume_name = _bound_to(claim)
        volume = store.get("persistentvolumes", volume_name)
        if volume is None:
            skip("wffc: volume not in the store")
            return None
        if BOUND_BY_CONTROLLER not in (_meta(claim).get("annotations") or {}) or BOUND_BY_CONTROLLER not in (_meta(volume).get("annotations") or {}):
            skip("wffc: pre-bound by a user")
            return None
        counts["wffc_bindings_checked"] += 1
        selected = (_meta(claim).get("annotations") or {}).get(SELECTED_NODE)
        if not selected:
            return found("wffc-bound-before-consumer", t, f"persistentvolumeclaims/{key}",
                         f"at revision {revision} (t={t:.3f}) claim {key} of WaitForFirstConsumer class {class_name} was bound to {volume_name} before the scheduler selected a node for it",
                         {"revision": revision, "claim": key, "volume": volume_name})
        node = store.get("nodes", str(selected))
        if node is None:
            skip("wffc: selected node not in the store")
            return None
        accepted = _accepts(volume, str(selected), node)
        if accepted is None:
            skip("wffc: volume nodeAffinity not parseable")
        elif not accepted:
            return found("wffc-wrong-topology", t, f"persistentvolumeclaims/{key}",
                         f"at revision {revision} (t={t:.3f}) claim {key} of WaitForFirstConsumer class {class_name} was bound to {volume_name}, whose node affinity does not allow its selected node {selected} ({_zone_of(node)})",
                         {"revision": revision, "claim": key, "volume": volume_name, "selected_node": selected,
                          "nodeAffinity": ((volume.get("spec") or {}).get("nodeAffinity"))})
        return None

    def track_orphan(volume_name: str, volume: Obj, t: float) -> None:
        reference = _claim_ref(volume)
        uid = str((reference or {}).get("uid") or "")
        if not uid or uid not in gone_claims or volume_name in orphans or (volume_name, uid) in cleared:
            return
        policy = str((volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain")
        since = max(gone_claims[uid], t)
        claim = f"{reference.get('namespace', '')}/{reference.get('name', '')}"  # type: ignore[union-attr]
        orphans[volume_name] = _Orphan(claim, uid, since, policy, _deadline(health, since, bound_s, end_t))
        counts["reclaims_checked"] += 1
        if (volume.get("status") or {}).get("phase") == "Released":
            orphans[volume_name].released_t = t

    def stray_of(volume_name: str) -> tuple[str, str] | None:
        """(claim, its other volume) when the volume names a live claim bound elsewhere."""
        volume = store.get("persistentvolumes", volume_name)
        reference = _claim_ref(volume)
        if volume is None or reference is None or _meta(volume).get("deletionTimestamp") or (volume.get("status") or {}).get("phase") == "Released":
            return None
        key = f"{reference.get('namespace', '')}/{reference.get('name', '')}"
        claim = store.get("persistentvolumeclaims", key)
        other = str(((claim or {}).get("spec") or {}).get("volumeName") or "")
        if claim is None or not _ref_names(reference, key, _uid(claim)) or not other or other == volume_name:
            return None
        return key, other

    def check_stray(volume_name: str, t: float) -> Verdict | None:
        now = stray_of(volume_name)
        if now is not None and volume_name not in strays:
            strays[volume_name] = (t, *now)
            counts["strays_checked"] += 1
        elif now is None and volume_name in strays:
            return stray_verdict(volume_name, strays.pop(volume_name), t)
        return None

    def stray_verdict(volume_name: str, stray: tuple[float, str, str], done: float | None) -> Verdict | None:
        since, key, other = stray
        deadline = _deadline(health, since, bound_s, end_t)
        if math.isinf(deadline):
            if done is None:
                skip("two volumes: no healthy stretch of the controller-manager after it")
            return None
        if done is not None and done <= deadline:
            return None
        when = f"only at t={done:.3f}" if done is not None else "never"
        return found("claim-bound-to-two-volumes", deadline, f"persistentvolumes/{volume_name}",
                     f"PersistentVolume {volume_name} stayed bound to claim {key} from t={since:.3f} while the claim was bound to {other}, and was let go {when}, though the controller-manager was healthy for {bound_s:g} s until t={deadline:.3f}: a claim binds one volume",
                     {"volume": volume_name, "claim": key, "other_volume": other, "since": since, "deadline": deadline, "done": done})

    def check_in_use(key: str, uid: str, t: float, revision: int) -> Verdict | None:
        """Rule 5, when the claim ``key`` (``uid``) leaves the store at ``revision``."""
        namespace, _, name = key.partition("/")
        users = [(pod_key, pod) for pod_key, pod in store.in_namespace("pods", namespace) if _uses_claim(pod, name)]
        mark = marked_at.get(key)
        if users and (mark is None or mark[0] != uid):
            skip("in use: claim removed without a recorded deletion mark")
            return None
        if users and mark is not None and not mark[2]:
            skip("in use: claim marked without the pvc-protection finalizer")
            return None
        counts["claim_removals_checked"] += 1
        for pod_key, pod in users:
            bound = bound_at.get(pod_key)
            if mark is None or bound is None or bound[0] != _uid(pod) or bound[1] >= mark[1]:
                continue
            node = _uses_claim(pod, name)
            return found("claim-removed-in-use", t, f"persistentvolumeclaims/{key}",
                         f"at revision {revision} (t={t:.3f}) PersistentVolumeClaim {key} left the store while pod {pod_key} (bound to {node} at revision {bound[1]}, "
                         f"before the claim was marked for deletion at revision {mark[1]}, phase {(pod.get('status') or {}).get('phase') or '?'}) still used it: "
                         f"the pvc-protection finalizer must hold a claim a pod uses",
                         {"revision": revision, "claim": key, "pod": pod_key, "node": node, "pod_bound_revision": bound[1], "claim_marked_revision": mark[1]})
        return None

    for event in events:
        if event.get("type") == "volume" and event.get("event") == "deleted":
            orphan = orphans.get(str(event.get("volume", "")))
            if orphan is not None and orphan.policy == "Retain":
                return found("retain-deleted", event["t"], f"persistentvolumes/{event.get('volume')}",
                             f"{event.get('controller', 'the controller')} deleted PersistentVolume {event.get('volume')} at t={event['t']:.3f}, whose reclaim policy is Retain, after its claim {orphan.claim} was deleted",
                             {"volume": event.get("volume"), "claim": orphan.claim})
        changes = store.apply(event)
        if not changes:
            continue
        volumes_touched: set[str] = set()
        pods_touched: dict[str, Obj] = {}
        claims_bound: list[tuple[str, Obj]] = []
        for change in changes:
            if change.resource == "persistentvolumeclaims":
                if change.after is not None:
                    if _uid(change.after) not in claim_uids:
                        claim_uids.add(_uid(change.after))
                        counts["claims"] += 1
                    volumes_touched.add(_bound_to(change.after))
                    if _bound_to(change.after) and _bound_to(change.after) != _bound_to(change.before):
                        claims_bound.append((change.key, change.after))
                    if _meta(change.after).get("deletionTimestamp") and change.key not in marked_at:
                        marked_at[change.key] = (_uid(change.after), change.revision, PVC_PROTECTION in (_meta(change.after).get("finalizers") or ()))
                else:
                    uid = _uid(change.before)
                    gone_claims.setdefault(uid, change.t)
                    for name, volume in sorted(store.objects("persistentvolumes").items()):
                        track_orphan(name, volume, change.t)
                    verdict = check_in_use(change.key, uid, change.t, change.revision)
                    if verdict is not None:
                        return verdict
                    marked_at.pop(change.key, None)
            elif change.resource == "persistentvolumes":
                volume_names.add(change.key)
                volumes_touched.add(change.key)
                orphan = orphans.get(change.key)
                if change.after is None or _meta(change.after).get("deletionTimestamp"):
                    if orphan is not None and orphan.gone_t is None:
                        orphan.gone_t = change.t
                    if change.after is None and orphan is not None:
                        finished.append((change.key, orphans.pop(change.key)))
                    continue
                reference = _claim_ref(change.after)
                uid = str((reference or {}).get("uid") or "")
                if orphan is not None:
                    if not uid:
                        cleared.add((change.key, orphan.uid))
                        orphans.pop(change.key)
                        skip("reclaim: claimRef cleared by an administrator")
                    elif uid != orphan.uid:
                        return found("released-rebound", change.t, f"persistentvolumes/{change.key}",
                                     f"at revision {change.revision} (t={change.t:.3f}) PersistentVolume {change.key} ({orphan.policy}) was bound to claim {reference.get('namespace', '')}/{reference.get('name', '')} (uid {uid}) after its claim {orphan.claim} (uid {orphan.uid}) had been deleted at t={orphan.since:.3f}: a released volume must not be bound again",  # type: ignore[union-attr]
                                     {"revision": change.revision, "volume": change.key, "released_claim": orphan.claim, "released_uid": orphan.uid, "claimRef": reference})
                    elif orphan.released_t is None and (change.after.get("status") or {}).get("phase") == "Released":
                        orphan.released_t = change.t
                else:
                    track_orphan(change.key, change.after, change.t)
            elif change.resource == "pods" and change.after is None:
                bound_at.pop(change.key, None)
            elif change.resource == "pods" and change.after is not None:
                node = str((change.after.get("spec") or {}).get("nodeName") or "")
                if node and bound_at.get(change.key, ("", 0))[0] != _uid(change.after):
                    bound_at[change.key] = (_uid(change.after), change.revision)
                if _running_on(change.after) and not _running_on(change.before):
                    pods_touched[change.key] = change.after
        for volume_name in sorted(volumes_touched):
            verdict = check_binding(volume_name, changes[-1].t, changes[-1].revision)
            if verdict is not None:
                return verdict
        touched_claims = {change.key for change in changes if change.resource == "persistentvolumeclaims"}
        if touched_claims:
            volumes_touched.update(name for name, volume in store.objects("persistentvolumes").items()
                                   if f"{(_claim_ref(volume) or {}).get('namespace', '')}/{(_claim_ref(volume) or {}).get('name', '')}" in touched_claims)
        for volume_name in sorted(volumes_touched | {name for name in strays}):
            verdict = check_stray(volume_name, changes[-1].t) if volume_name else None
            if verdict is not None:
                return verdict
        for key, claim in claims_bound:
            verdict = check_wffc(key, claim, changes[-1].t, changes[-1].revision)
            if verdict is not None:
                return verdict
            namespace, _, name = key.partition("/")
            for pod_key, pod in store.in_namespace("pods", namespace):
                if name in _pod_claims(pod):
                    pods_touched.setdefault(pod_key, pod)
        for pod_key in sorted(pods_touched):
            verdict = check_placement(pod_key, pods_touched[pod_key], changes[-1].t, changes[-1].revision)
            if verdict is not None:
                return verdict
    for name, stray in sorted(strays.items()):
        verdict = stray_verdict(name, stray, None)
        if verdict is not None:
            return verdict
    for name, orphan in [*finished, *sorted(orphans.items())]:
        done = orphan.gone_t if orphan.policy == "Delete" else (orphan.released_t if orphan.released_t is not None else orphan.gone_t)
        if math.isinf(orphan.deadline):
            if done is None:
                skip("reclaim: no healthy stretch of the controller-manager after the claim's deletion")
            continue
        if done is None or done > orphan.deadline:
            want = "deleted" if orphan.policy == "Delete" else "Released"
            when = f"only at t={done:.3f}" if done is not None else "never"
            return found("reclaim-late", orphan.deadline, f"persistentvolumes/{name}",
                         f"PersistentVolume {name} (reclaim policy {orphan.policy}) was {want} {when}, though its claim {orphan.claim} left the store at t={orphan.since:.3f} and the controller-manager was healthy for {bound_s:g} s until t={orphan.deadline:.3f}",
                         {"volume": name, "claim": orphan.claim, "policy": orphan.policy, "since": orphan.since, "deadline": orphan.deadline, "done": done})
    details = {**counts, "unjudged": dict(sorted(unjudged.items()))}
    if not claim_uids:
        return nothing_to_judge("the store never held a PersistentVolumeClaim: nothing to judge", (), details)
    return Verdict(True, (f"{counts['claims']} claim(s), {len(volume_names)} volume(s): {counts['bindings_checked']} binding check(s) one-to-one, "
                          f"{counts['placements_checked']} pod placement(s) within volume node affinity, {counts['wffc_bindings_checked']} WaitForFirstConsumer binding(s) "
                          f"at the selected node, {counts['reclaims_checked']} reclaim(s) as the policy says, {counts['claim_removals_checked']} claim removal(s) "
                          f"with no pod using it"), (), details)


def _zone_of(node: Obj) -> str:
    labels = _meta(node).get("labels") or {}
    zone = labels.get("topology.kubernetes.io/zone")
    return f"zone {zone}" if zone else "no zone label"

"""The garbage collector, as kube-controller-manager's ``pkg/controller/garbagecollector``,
for background cascading deletion.

Upstream sources followed (kubernetes/kubernetes ``pkg/controller/garbagecollector/``):

- ``garbagecollector.go`` — ``attemptToDeleteItem``: read the dependent live; skip it when
  it is gone, replaced (uid) or already being deleted; ``classifyReferences`` into solid
  and dangling owners with ``isDangling`` (an owner is absent when a live GET answers 404
  or an object with another uid; absences are remembered in ``absentOwnerCache``); with
  a solid owner, remove the dangling references; with none, delete the dependent with
  propagation Background;
- ``operations.go`` — ``deleteObject`` with uid and resourceVersion preconditions, retried
  without the resourceVersion when only it changed (the owners did not);
- ``patch.go`` — ``deleteOwnerRefJSONMergePatch``: the remaining references with the
  object's resourceVersion;
- ``graph_builder.go`` — what makes a dependent a candidate: an owner observed deleted
  (its dependents are enqueued), or a dependent referencing an owner the graph has not
  observed (upstream's "virtual" node, verified against the API server); while the first
  lists arrive, ``addDependentToOwners`` (a virtual node's identity: the reference's
  coordinates, the dependent's namespace; hasPotentiallyInvalidOwnerReference),
  ``processGraphChanges`` (an observed identity replaces a virtual one, the dependents that
  do not match it are enqueued) and ``partitionDependents`` (read at commit 02830ed2 of
  kubernetes/kubernetes; unchanged in substance since #92743, v1.20);
- ``uid_cache.go`` / ``absent_owner_cache.go`` — the LRU of absent owners (500 entries).
- The worker count is ``--concurrent-gc-syncs`` (20, ``ControllerManagerConfig``).

Model of upstream's dependency graph over every resource: as ``graph_builder.go``'s
monitors cover every resource discovery lists with the verbs delete, list and watch
(``GetDeletableResources``) except ``ignoredResources`` (Events, core and events.k8s.io),
informers on every served kind (:data:`GC_RESOURCES`: Deployments, ConfigMaps, Secrets,
Services, Nodes, Namespaces, PersistentVolumes, RBAC objects, Leases ...) are both the
dependents (indexed by owner uid) and the owners (indexed by uid); and so is every custom
resource once its CustomResourceDefinition is Established (their informers start then, as
upstream's GC follows discovery). So any kind may own any kind: a Deployment owned by a
custom resource goes with it, a namespaced object owned by a cluster-scoped one (a Node, a
cluster-scoped custom resource) goes with it in whatever namespace it lives. A dependent
is enqueued when one of its owners is deleted, or when it references an owner that the
owner caches do not hold (after they synced; then once for every dependent: upstream's
"virtual" node). The decision is always taken on live reads (quorum GETs of the dependent
and of each owner), as upstream's, so a lagging cache can delay a collection but never
cause a wrong one.

The graph while the first lists arrive (``graph_builder.go``, ``addDependentToOwners`` and
``processGraphChanges``; kubernetes/kubernetes#92743): a collector that starts -- after a
failover -- builds upstream's ``uidToNode`` from the informers' first lists, in the order they
arrive. A dependent delivered before its owner gives the owner a *virtual* node, identified by
that reference's coordinates and that dependent's namespace; a later dependent whose reference
disagrees with the virtual identity (another namespace, or other coordinates) is enqueued to be
verified on live reads (hasPotentiallyInvalidOwnerReference); when the owner is delivered, its
observed identity replaces the virtual one and the dependents that do not match it
(``partitionDependents``) are enqueued. So when a copy of web's ReplicaSet in namespace
``backup`` (an invalid cross-namespace reference, kubernetes#65200) is delivered before web's
own ReplicaSet and before web, web's own ReplicaSet is verified too: its owner is found in its
namespace and it is kept. Only invalid references enqueue anything here: with valid ones (every
dependent in its owner's namespace, with its coordinates) the first lists enqueue nothing, in
any order. :class:`VirtualOwner` keeps only the virtual nodes: an owner the caches hold is
observed, and the first scan checks the references to it (``_owner_known``). An owner never
delivered (absent) keeps its virtual node until the first scan, which enqueues its dependents
-- upstream verifies the virtual node itself, and its virtual delete event enqueues the
dependents that match the identity found absent, then the others under their identities:
every dependent is checked either way, on live reads.

Scopes, as upstream's ``isDangling`` (garbagecollector.go): a namespaced owner is looked
up in its dependent's namespace (an owner of the same name in another namespace does not
count: the dependent is collected); a cluster-scoped owner, wherever it is referenced
from; a cluster-scoped dependent that names a namespaced owner is invalid
(``namespacedOwnerOfClusterScopedObjectErr``): never collected, never retried, journaled
once as ``gc-invalid-owner`` (upstream records the Warning event OwnerRefInvalidNamespace).

Contract: as the other controllers (handlers only enqueue; ``await run()`` waits for the
caches and runs the workers; errors requeue with rate limiting).

Owners deleted with ``propagationPolicy`` Orphan or Foreground (the API server leaves the
``orphan`` or ``foregroundDeletion`` finalizer on them, with a ``deletionTimestamp``) are
handled as upstream's ``attemptToOrphan`` / ``processDeletingDependentsItem`` do
(``garbagecollector.go``, ``operations.go`` ``removeFinalizer``):

- **orphan**: every dependent (a live list of each dependent resource in the owner's
  namespace: the decision is never taken on a cache) loses its reference to the owner (a
  resourceVersion-guarded merge patch), then the ``orphan`` finalizer is removed from the
  owner, which the API server then deletes;
- **foreground**: every dependent not yet being deleted is deleted -- with propagation
  Foreground when it has dependents of its own (a ReplicaSet with pods, a custom resource
  owning a Deployment), else Background, as ``attemptToDeleteItem`` does for an item
  whose owner is ``waitingForDependentsDeletion`` --, and once no dependent with ``blockOwnerDeletion``
  on its reference to the owner exists any more (terminating ones still block), the
  ``foregroundDeletion`` finalizer is removed. Until then the owner is looked at again
  when a dependent goes, and with the rate limiter's backoff.

Journal: ``{"type": "gc-delete", "resource", "namespace", "name", "uid", "owners",
"policy"}`` for each dependent deleted, ``{"type": "gc-orphan-refs", ...}`` for each removal
of dangling references, ``{"type": "gc-orphan", "resource", "namespace", "name", "uid",
"owner"}`` for each reference to an orphaning owner removed, and ``{"type":
"gc-finalizer", "resource", "namespace", "name", "uid", "finalizer"}`` when the collector
removes its finalizer from an owner.

Which dependents an orphaning or foreground-deleting owner has: a live list of each
resource that the caches show holding a dependent of it (upstream reads its graph, a cache,
there): a dependent created after the owner's deletion began and not yet in the caches is
found on the next look, which every change of a dependent triggers.

Non-guarantees: an owner of a kind the API server does not serve (a custom resource whose
CRD is not established, a typo'd kind) is never treated as absent: its dependents are not
collected (upstream retries the lookup with backoff for ever). The absent-owner cache is keyed by
coordinates and the namespace looked in and, as upstream's, is only a cache: an owner never comes back with the same uid. Upstream's step that sets
``blockOwnerDeletion`` false on a dependent before deleting it in the foreground (to
avoid deadlocks between owners) is not modelled.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import trio

from chaoskube.api.objects import KINDS, OwnerReference
from chaoskube.api.protocol import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, DeleteOptions
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformer, SharedInformerFactory
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import ControllerError, add_index, owner_references_patch, work_loop

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "ABSENT_OWNER_CACHE_SIZE",
    "AbsentOwnerCache",
    "DEPENDENT_RESOURCES",
    "GC_RESOURCES",
    "GarbageCollector",
    "GraphDependent",
    "IGNORED_RESOURCES",
    "Identity",
    "OWNER_RESOURCES",
    "OWNER_UID_INDEX",
    "UID_INDEX",
    "VirtualOwner",
    "classify",
    "matches_coordinates",
    "owner_resource",
    "partition_dependents",
]

#: ``ignoredResources`` of graph_builder.go (``DefaultIgnoredResources``): Events, core and
#: events.k8s.io, are never watched, owned or collected.
IGNORED_RESOURCES = frozenset({"events", "events.events.k8s.io"})
#: Every built-in resource the collector watches, as dependents and as owners (module doc).
GC_RESOURCES = tuple(sorted({info.resource for info in KINDS.values() if info.resource not in IGNORED_RESOURCES}))
#: The dependents and owners this model watches: every kind (names kept for callers).
DEPENDENT_RESOURCES = GC_RESOURCES
OWNER_RESOURCES = GC_RESOURCES
#: Index names on the informers.
OWNER_UID_INDEX = "garbagecollector/owner-uid"
UID_INDEX = "garbagecollector/uid"
#: ``NewReferenceCache(500)`` in ``NewGarbageCollector``.
ABSENT_OWNER_CACHE_SIZE = 500


def _owner_uids(obj: Any) -> list[str]:
    return [reference.uid for reference in obj.metadata.owner_references]


def _uid(obj: Any) -> list[str]:
    return [obj.metadata.uid] if obj.metadata.uid else []


def owner_resource(reference: OwnerReference) -> str | None:
    """The resource of a built-in owner kind (``apiResource`` through the REST mapper),
    or None for a kind the API server does not serve (custom kinds: the collector's own
    map), an ignored one, or an apiVersion that does not match."""
    info = KINDS.get(reference.kind)
    if info is None or info.resource not in OWNER_RESOURCES or info.api_version != reference.api_version:
        return None
    return info.resource


class AbsentOwnerCache:
    """``ReferenceCache``: an LRU set of owners known to be absent (``_is_dangling`` keys
    them by coordinates and the namespace looked in); at the bound the least recently used
    entry is dropped (the owner is then looked up again)."""

    def __init__(self, capacity: int = ABSENT_OWNER_CACHE_SIZE) -> None:
        assert capacity > 0
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, None] = OrderedDict()

    def add(self, uid: Hashable) -> None:
        self._entries[uid] = None
        self._entries.move_to_end(uid)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def has(self, uid: Hashable) -> bool:
        if uid in self._entries:
            self._entries.move_to_end(uid)
            return True
        return False

    def __len__(self) -> int:
        return len(self._entries)


def classify(references: Sequence[OwnerReference], absent: Sequence[bool]) -> tuple[list[OwnerReference], list[OwnerReference]]:
    """``classifyReferences`` without foreground deletion: (solid, dangling)."""
    assert len(references) == len(absent)
    solid = [reference for reference, gone in zip(references, absent) if not gone]
    dangling = [reference for reference, gone in zip(references, absent) if gone]
    return solid, dangling


class Identity(NamedTuple):
    """A node's identity in upstream's graph (``objectReference`` of graph.go): an owner
    reference's coordinates and a namespace."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str


class GraphDependent(NamedTuple):
    """A dependent as a node of the graph knows it: where it is and its owner references."""

    resource: str
    namespace: str
    name: str
    uid: str
    references: tuple[OwnerReference, ...]


def matches_coordinates(reference: OwnerReference, identity: Identity) -> bool:
    """``ownerReferenceMatchesCoordinates`` (graph.go): uid, name, kind and apiVersion."""
    return (reference.uid, reference.name, reference.kind, reference.api_version) == (identity.uid, identity.name, identity.kind, identity.api_version)


def partition_dependents(dependents: Sequence[GraphDependent], identity: Identity) -> tuple[list[GraphDependent], list[GraphDependent]]:
    """``partitionDependents`` (graph_builder.go): (matching, nonmatching) -- a dependent
    in another namespace than a namespaced ``identity`` does not match; otherwise each of
    its references with the uid matches when all coordinates do. A dependent with two
    references to the uid can be in both lists."""
    matching, nonmatching = [], []
    for dependent in dependents:
        found_match = found_mismatch = False
        if identity.namespace and identity.namespace != dependent.namespace:
            found_mismatch = True
        else:
            for reference in dependent.references:
                if reference.uid == identity.uid:
                    if matches_coordinates(reference, identity):
                        found_match = True
                    else:
                        found_mismatch = True
        if found_match:
            matching.append(dependent)
        if found_mismatch:
            nonmatching.append(dependent)
    return matching, nonmatching


class VirtualOwner:
    """A "virtual" node of ``uidToNode``: an owner referenced by dependents before any
    informer delivered it, known by the coordinates of the first reference and that
    dependent's namespace (``addDependentToOwners``)."""

    def __init__(self, identity: Identity, dependent: GraphDependent) -> None:
        self.identity = identity
        self.dependents = [dependent]


class GarbageCollector:
    """``GarbageCollector`` for background deletion (see the module docstring)."""

    def __init__(
        self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "garbage-collector"
    ) -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.queue = RateLimitingQueue(process)
        self.absent_owners = AbsentOwnerCache()
        #: uidToNode's virtual nodes while the informers deliver their first lists (see
        #: _graph_add); emptied by the first scan
        self.virtual_owners: dict[str, VirtualOwner] = {}
        self.dependents: dict[str, SharedInformer] = {}
        self.owners: dict[str, SharedInformer] = {}
        self._scanned = False
        self._informers = informers
        self._nursery: trio.Nursery | None = None
        #: custom kinds by (apiVersion, kind): (resource, namespaced), from the established CRDs
        self._custom: dict[tuple[str, str], tuple[str, bool]] = {}
        self.crds = informers.informer("customresourcedefinitions")
        self.crds.add_event_handler(on_add=self._crd_changed, on_update=lambda old, new: self._crd_changed(new))
        for resource in DEPENDENT_RESOURCES:
            informer = self.dependents[resource] = informers.informer(resource)
            add_index(informer, OWNER_UID_INDEX, _owner_uids)
            informer.add_event_handler(
                on_add=lambda obj, r=resource: self._dependent_changed(r, obj),
                on_update=lambda old, new, r=resource: self._dependent_changed(r, new, old),
                on_delete=self._dependent_deleted,
            )
        for resource in OWNER_RESOURCES:
            informer = self.owners[resource] = informers.informer(resource)
            add_index(informer, UID_INDEX, _uid)
            informer.add_event_handler(
                on_add=lambda obj, r=resource: self._owner_changed(r, obj),
                on_update=lambda old, new, r=resource: self._owner_updated(old, new, r),
                on_delete=self._owner_deleted,
            )

    # -- custom resources: watched as dependents and owners once their CRD is established --
    def _crd_changed(self, crd: Any) -> None:
        if not any(c.type == "Established" and c.status == "True" for c in crd.status.conditions):
            return
        resource = f"{crd.spec.names.plural}.{crd.spec.group}"
        namespaced = crd.spec.scope != "Cluster"
        for version in crd.spec.versions:
            if version.served:
                self._custom[(f"{crd.spec.group}/{version.name}", crd.spec.names.kind)] = (resource, namespaced)
        if resource in self.dependents:
            return
        informer = self.dependents[resource] = self.owners[resource] = self._informers.informer(resource)
        add_index(informer, OWNER_UID_INDEX, _owner_uids)
        add_index(informer, UID_INDEX, _uid)
        informer.add_event_handler(
            on_add=lambda obj, r=resource: (self._dependent_changed(r, obj), self._owner_changed(r, obj)),
            on_update=lambda old, new, r=resource: (self._dependent_changed(r, new, old), self._owner_updated(old, new, r)),
            on_delete=lambda obj: (self._dependent_deleted(obj), self._owner_deleted(obj)),
        )
        if self._nursery is not None:
            self._informers.start(self._nursery)

    def _owner_resource(self, reference: OwnerReference) -> str | None:
        custom = self._custom.get((reference.api_version, reference.kind))
        if custom is not None:
            return custom[0]
        return owner_resource(reference)

    def _owner_namespaced(self, reference: OwnerReference) -> bool:
        custom = self._custom.get((reference.api_version, reference.kind))
        if custom is not None:
            return custom[1]
        return KINDS[reference.kind].namespaced

    # -- handlers (enqueue only) ----------------------------------------------------------
    def _owners_synced(self) -> bool:
        return all(informer.has_synced() for informer in self.owners.values())

    def _owner_known(self, reference: OwnerReference, namespace: str) -> bool:
        """False for an owner the caches do not hold where ``reference`` from a dependent
        in ``namespace`` points: not at all (upstream's virtual node), or only in another
        namespace or under another name (``addDependentToOwners``'
        hasPotentiallyInvalidOwnerReference): the dependent is then checked on live reads."""
        resource = self._owner_resource(reference)
        if resource is None or resource not in self.owners:
            return True
        cached = self.owners[resource].indexer.by_index(UID_INDEX, reference.uid)
        return any(owner.metadata.name == reference.name and owner.metadata.namespace in ("", namespace) for owner in cached)

    def _enqueue(self, resource: str, obj: Any) -> None:
        meta = obj.metadata
        self.queue.add((resource, meta.namespace, meta.name, meta.uid))

    def _dependent_changed(self, resource: str, obj: Any, old: Any = None) -> None:
        if old is not None and old.metadata.owner_references:
            self._wake_deleting_owners(old)  # a reference gone, or the dependent being deleted
        if not self._scanned and old is None and obj.metadata.owner_references:
            self._graph_add(resource, obj)
        if not self._scanned or not obj.metadata.owner_references:
            return  # before the first scan (see run) or not a dependent
        if old is not None and old.metadata.owner_references == obj.metadata.owner_references and old.metadata.uid == obj.metadata.uid:
            return  # the owners did not change: nothing new to check
        if not all(self._owner_known(reference, obj.metadata.namespace) for reference in obj.metadata.owner_references):
            self._enqueue(resource, obj)

    def _owner_updated(self, old: Any, new: Any, resource: str = "") -> None:
        if old.metadata.uid != new.metadata.uid:  # replaced while the watch was down
            self._owner_deleted(old)
        if resource:
            self._owner_changed(resource, new)

    def _owner_changed(self, resource: str, obj: Any) -> None:
        """An owner being deleted with the orphan or foregroundDeletion finalizer."""
        if self.virtual_owners and not self._scanned:
            self._graph_observe(obj)
        meta = obj.metadata
        if meta.deletion_timestamp is not None and (ORPHAN_FINALIZER in meta.finalizers or FOREGROUND_FINALIZER in meta.finalizers):
            self.queue.add(("owner", resource, meta.namespace, meta.name, meta.uid))

    def _dependent_deleted(self, obj: Any) -> None:
        dependent = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if dependent is not None:
            self._wake_deleting_owners(dependent)

    def _wake_deleting_owners(self, dependent: Any) -> None:
        """A dependent went away or changed: its owners waiting in the foreground look again."""
        for reference in dependent.metadata.owner_references:
            resource = self._owner_resource(reference)
            if resource is None or resource not in self.owners:
                continue
            for owner in self.owners[resource].indexer.by_index(UID_INDEX, reference.uid):
                self._owner_changed(resource, owner)

    def _owner_deleted(self, obj: Any) -> None:
        owner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if owner is None or not owner.metadata.uid:
            return
        for resource in sorted(self.dependents):
            for dependent in self.dependents[resource].indexer.by_index(OWNER_UID_INDEX, owner.metadata.uid):
                self._enqueue(resource, dependent)

    # -- the graph while the first lists arrive ------------------------------------------
    def _observed(self, uid: str) -> bool:
        """Whether an informer delivered the object of ``uid`` (uidToNode holds an observed node)."""
        return any(informer.indexer.index_keys(UID_INDEX, uid) for informer in self.owners.values())

    def _graph_add(self, resource: str, obj: Any) -> None:
        """``addDependentToOwners`` for a dependent delivered before the first scan: an owner
        no informer has delivered yet gets a virtual node with this reference's coordinates
        and this dependent's namespace; a dependent whose reference disagrees with an
        existing virtual node's identity (another namespace, or other coordinates) is
        enqueued (``hasPotentiallyInvalidOwnerReference``), to be verified on live reads.
        References to owners already delivered are checked by the first scan (_owner_known)."""
        meta = obj.metadata
        dependent = GraphDependent(resource, meta.namespace, meta.name, meta.uid, tuple(meta.owner_references))
        potentially_invalid = False
        for reference in meta.owner_references:
            if self._observed(reference.uid):
                continue
            node = self.virtual_owners.get(reference.uid)
            if node is None:
                identity = Identity(reference.api_version, reference.kind, reference.name, reference.uid, meta.namespace)
                self.virtual_owners[reference.uid] = VirtualOwner(identity, dependent)
                continue
            node.dependents.append(dependent)
            # the owner is virtual: a namespace other than its identity's, or other coordinates
            if node.identity.namespace != meta.namespace or not matches_coordinates(reference, node.identity):
                potentially_invalid = True
        if potentially_invalid:
            self._enqueue(resource, obj)

    def _graph_observe(self, obj: Any) -> None:
        """``processGraphChanges``: an informer delivers an owner that has a virtual node;
        if its observed identity differs from the virtual one, the dependents that do not
        match it are enqueued ("bad child -> good parent"), and the node is observed."""
        meta = obj.metadata
        node = self.virtual_owners.pop(meta.uid, None)
        if node is None:
            return
        observed = Identity(obj.api_version, obj.kind, meta.name, meta.uid, meta.namespace)
        if observed == node.identity:
            return
        for dependent in partition_dependents(node.dependents, observed)[1]:
            self.queue.add((dependent.resource, dependent.namespace, dependent.name, dependent.uid))

    # -- running --------------------------------------------------------------------------
    async def run(self) -> None:
        """Wait for every cache, check every dependent once (owners deleted while nobody
        watched), then run ``config.concurrent_gc_syncs`` workers."""
        for informer in [*self.owners.values(), *self.dependents.values(), self.crds]:
            await informer.wait_for_sync()
        self._scanned = True
        for resource in sorted(self.dependents):
            for obj in self.dependents[resource].indexer.list():
                self._dependent_changed(resource, obj)
        self.virtual_owners.clear()  # owners never delivered: their dependents are enqueued above
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._informers.start(nursery)  # the custom resources found while syncing
            for _ in range(self.config.concurrent_gc_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    # -- the decision -----------------------------------------------------------------------
    async def sync(self, item: tuple[str, ...]) -> None:
        """``attemptToDeleteItem`` for one dependent, or an owner's orphan / foreground step."""
        if item[0] == "owner":
            await self._sync_owner(item[1], item[2], item[3], item[4])
            return
        resource, namespace, name, uid = item
        try:
            latest = await self.client.get(resource, namespace, name)
        except ApiError as error:
            if error.code == 404:
                return
            raise
        if latest.metadata.uid != uid or latest.metadata.deletion_timestamp is not None:
            return
        references = list(latest.metadata.owner_references)
        if not references:
            return
        invalid = [reference for reference in references if not namespace and self._owner_resource(reference) is not None and self._owner_namespaced(reference)]
        if invalid:
            # namespacedOwnerOfClusterScopedObjectErr: will not resolve on retry; left alone.
            self.process.world.record(
                "gc-invalid-owner", resource=resource, name=name, uid=uid, owners=[reference.uid for reference in invalid], controller=self.name,
                reason="a cluster-scoped object cannot have a namespaced owner (OwnerRefInvalidNamespace)",
            )
            return
        absent = [await self._is_dangling(reference, namespace) for reference in references]
        solid, dangling = classify(references, absent)
        if solid:
            if dangling:
                await self._remove_references(resource, latest, solid, dangling)
            return
        await self._delete(resource, latest, references)

    # -- owners deleted with the orphan or foreground policy ------------------------------
    async def _sync_owner(self, resource: str, namespace: str, name: str, uid: str) -> None:
        try:
            owner = await self.client.get(resource, namespace, name)
        except ApiError as error:
            if error.code == 404:
                return
            raise
        meta = owner.metadata
        if meta.uid != uid or meta.deletion_timestamp is None:
            return
        if ORPHAN_FINALIZER in meta.finalizers:
            await self._orphan_dependents(resource, owner)
        elif FOREGROUND_FINALIZER in meta.finalizers:
            await self._delete_dependents(resource, owner)

    def _has_dependents(self, uid: str) -> bool:
        """Whether the caches hold an object that ``uid`` owns (upstream's
        ``item.dependentsLength() != 0``, read from its graph)."""
        return any(informer.indexer.index_keys(OWNER_UID_INDEX, uid) for informer in self.dependents.values())

    async def _dependents_of(self, owner: Any) -> list[tuple[str, Any]]:
        """Every object referencing ``owner``: a live list, in the owner's namespace (every
        namespace for a cluster-scoped owner), of each resource whose cache holds one
        (module docstring)."""
        found = []
        uid = owner.metadata.uid
        for resource in sorted(self.dependents):  # every built-in resource and every custom resource
            if not self.dependents[resource].indexer.index_keys(OWNER_UID_INDEX, uid):
                continue
            listed = await self.client.list(resource, owner.metadata.namespace)
            found += [(resource, obj) for obj in listed.items if any(reference.uid == uid for reference in obj.metadata.owner_references)]
        return found

    async def _orphan_dependents(self, resource: str, owner: Any) -> None:
        """``orphanDependents`` then ``removeFinalizer(orphan)``."""
        for dependent_resource, dependent in await self._dependents_of(owner):
            remaining = [reference for reference in dependent.metadata.owner_references if reference.uid != owner.metadata.uid]
            try:
                await self.client.patch(dependent_resource, dependent.metadata.namespace, dependent.metadata.name, owner_references_patch(dependent, remaining))
            except ApiError as error:
                if error.code == 404:
                    continue
                raise
            self.process.world.record(
                "gc-orphan", resource=dependent_resource, namespace=dependent.metadata.namespace, name=dependent.metadata.name,
                uid=dependent.metadata.uid, owner=owner.metadata.uid, controller=self.name,
            )
        await self._remove_finalizer(resource, owner, ORPHAN_FINALIZER)

    async def _delete_dependents(self, resource: str, owner: Any) -> None:
        """``processDeletingDependentsItem`` with the deletion of the dependents that
        ``attemptToDeleteItem`` does for an owner waiting for them."""
        blocking = 0
        for dependent_resource, dependent in await self._dependents_of(owner):
            reference = next(reference for reference in dependent.metadata.owner_references if reference.uid == owner.metadata.uid)
            if reference.block_owner_deletion:
                blocking += 1
            if dependent.metadata.deletion_timestamp is not None:
                continue
            policy = "Foreground" if self._has_dependents(dependent.metadata.uid) else "Background"
            options = DeleteOptions(preconditions_uid=dependent.metadata.uid, propagation_policy=policy)
            try:
                await self.client.delete(dependent_resource, dependent.metadata.namespace, dependent.metadata.name, options=options)
            except ApiError as error:
                if error.code in (404, 409):
                    continue
                raise
            self.process.world.record(
                "gc-delete", resource=dependent_resource, namespace=dependent.metadata.namespace, name=dependent.metadata.name,
                uid=dependent.metadata.uid, owners=[reference.uid for reference in dependent.metadata.owner_references],
                controller=self.name, policy=policy,
            )
        if blocking:
            raise ControllerError(f"{resource} {owner.metadata.namespace}/{owner.metadata.name}: waiting for {blocking} blocking dependent(s) to go")
        await self._remove_finalizer(resource, owner, FOREGROUND_FINALIZER)

    async def _remove_finalizer(self, resource: str, owner: Any, finalizer: str) -> None:
        """``removeFinalizer``: a merge patch of ``metadata.finalizers`` guarded by the
        owner's resourceVersion (a conflict requeues it)."""
        meta = owner.metadata
        remaining = [name for name in meta.finalizers if name != finalizer]
        patch = {"metadata": {"finalizers": remaining or None, "resourceVersion": meta.resource_version, "uid": meta.uid}}
        try:
            await self.client.patch(resource, meta.namespace, meta.name, patch)
        except ApiError as error:
            if error.code == 404:
                return
            raise
        self.process.world.record("gc-finalizer", resource=resource, namespace=meta.namespace, name=meta.name, uid=meta.uid, finalizer=finalizer, controller=self.name)

    async def _is_dangling(self, reference: OwnerReference, namespace: str) -> bool:
        """``isDangling``: a live GET of the owner (namespaced owners live in the
        dependent's namespace). Raises ApiError when the answer is not conclusive."""
        # The absent owners are remembered by coordinates and the namespace looked in
        # (``objectReference``, since kubernetes/kubernetes#92743): keyed by uid alone, an
        # owner absent from one namespace (an invalid cross-namespace reference) made its
        # valid dependents in its own namespace look orphaned too (#65200).
        coordinates = (reference.api_version, reference.kind, reference.name, reference.uid)
        if self.absent_owners.has((*coordinates, "")) or self.absent_owners.has((*coordinates, namespace)):
            return True
        resource = self._owner_resource(reference)
        if resource is None:
            return False  # a kind the API server does not serve: never absent
        owner_namespace = namespace if self._owner_namespaced(reference) else ""
        try:
            owner = await self.client.get(resource, owner_namespace, reference.name)
        except ApiError as error:
            if error.code != 404:
                raise
            self.absent_owners.add((*coordinates, owner_namespace))
            return True
        if owner.metadata.uid != reference.uid:
            self.absent_owners.add((*coordinates, owner_namespace))
            return True
        return False

    async def _remove_references(self, resource: str, obj: Any, solid: list[OwnerReference], dangling: list[OwnerReference]) -> None:
        """``deleteOwnerReferences`` (merge patch with the resourceVersion)."""
        gone = {reference.uid for reference in dangling}
        remaining = [reference for reference in obj.metadata.owner_references if reference.uid not in gone]
        try:
            await self.client.patch(resource, obj.metadata.namespace, obj.metadata.name, owner_references_patch(obj, remaining))
        except ApiError as error:
            if error.code == 404:
                return
            raise
        self.process.world.record(
            "gc-orphan-refs", resource=resource, namespace=obj.metadata.namespace, name=obj.metadata.name, uid=obj.metadata.uid,
            removed=sorted(gone), kept=[reference.uid for reference in solid],
        )

    async def _delete(self, resource: str, obj: Any, references: list[OwnerReference]) -> None:
        """``deleteObject``: preconditions uid and resourceVersion; after a conflict, again
        with the uid only if the owners are still the same."""
        meta = obj.metadata
        options = DeleteOptions(preconditions_uid=meta.uid, preconditions_resource_version=meta.resource_version)
        try:
            await self.client.delete(resource, meta.namespace, meta.name, options=options)
        except ApiError as error:
            if error.code == 404:
                return
            if error.code != 409 or error.ambiguous:
                raise
            try:
                live = await self.client.get(resource, meta.namespace, meta.name)
            except ApiError as again:
                if again.code == 404:
                    return
                raise
            if live.metadata.uid != meta.uid or live.metadata.owner_references != references or live.metadata.resource_version == meta.resource_version:
                raise ControllerError(f"{resource} {meta.namespace}/{meta.name} changed while being collected: will look again") from error
            try:
                await self.client.delete(resource, meta.namespace, meta.name, options=DeleteOptions(preconditions_uid=meta.uid))
            except ApiError as third:
                if third.code != 404:
                    raise
                return
        self.process.world.record(
            "gc-delete", resource=resource, namespace=meta.namespace, name=meta.name, uid=meta.uid,
            owners=[reference.uid for reference in references], controller=self.name,
        )

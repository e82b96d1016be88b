"""Table tests of the scheduler's plugins, framework and preemption, without Trio.

Cases follow the upstream tests named in each test's docstring
(``pkg/scheduler/framework/plugins/*/*_test.go``); where upstream asserts numbers, the
numbers here are the same, and where a case is our own the expected value is derived in
the comment from upstream's formula."""

from __future__ import annotations

import random

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.scheduler.framework import (
    Code,
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    NodeInfo,
    NodeToStatus,
    NoNodesAvailable,
    PodInfo,
    SchedulerCache,
    Snapshot,
    Status,
    default_normalize_score,
    node_tree_order,
    selector_key,
    num_feasible_nodes_to_find,
    pod_requests,
    schedule_pod,
    select_host,
)
from chaoskube.scheduler.plugins import (
    InterPodAffinity,
    NodeAffinity,
    NodeName,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    NodeUnschedulable,
    PodTopologySpread,
    TaintToleration,
    balanced_resource_score,
    default_plugins,
    least_requested_score,
)
from chaoskube.scheduler.preemption import (
    Candidate,
    DefaultPreemption,
    calculate_num_candidates,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
)
from tests.scheduler import HOSTNAME, ZONE, anti_affinity, make_node, make_pod, pod_affinity, spread_constraint

OK = Code.SUCCESS
UNSCHED = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def run_filter(plugin, pod, node_name, snapshot):
    """PreFilter (if any) then Filter on one node of ``snapshot``."""
    state = CycleState(snapshot)
    if hasattr(plugin, "pre_filter"):
        status = plugin.pre_filter(state, pod, snapshot)
        if status.is_skip():
            return Status()
        assert status.is_success(), status
    return plugin.filter(state, pod, snapshot.get(node_name))


def run_score(plugin, pod, snapshot):
    """PreScore (if any), Score every node, NormalizeScore (if any)."""
    state = CycleState(snapshot)
    nodes = snapshot.list()
    if hasattr(plugin, "pre_score"):
        status = plugin.pre_score(state, pod, nodes)
        if status.is_skip():
            return None
    scores = {}
    for info in nodes:
        score, status = plugin.score(state, pod, info)
        assert status.is_success(), status
        scores[info.name] = score
    if hasattr(plugin, "normalize_score"):
        plugin.normalize_score(state, pod, scores)
    return scores


def taint(key, value, effect="NoSchedule"):
    return {"key": key, "value": value, "effect": effect}


# =========================================================================== TaintToleration
@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "expected"),
    [
        ("no tolerations, nonempty taints", [], [taint("dedicated", "user1")], (UNRESOLVABLE, "node(s) had untolerated taint {dedicated: user1}")),
        ("tolerates user1 NoSchedule", [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}], [taint("dedicated", "user1")], (OK, "")),
        ("toleration for user2 does not fit user1", [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}], [taint("dedicated", "user1")], (UNRESOLVABLE, "node(s) had untolerated taint {dedicated: user1}")),
        ("operator Exists", [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}], [taint("foo", "bar")], (OK, "")),
        ("all of several taints tolerated", [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}, {"key": "foo", "operator": "Exists", "effect": "NoSchedule"}], [taint("dedicated", "user2"), taint("foo", "bar")], (OK, "")),
        ("effect mismatch", [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}], [taint("foo", "bar")], (UNRESOLVABLE, "node(s) had untolerated taint {foo: bar}")),
        ("empty toleration effect tolerates NoSchedule", [{"key": "foo", "operator": "Equal", "value": "bar"}], [taint("foo", "bar")], (OK, "")),
        ("PreferNoSchedule taint never filters", [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}], [taint("dedicated", "user1", "PreferNoSchedule")], (OK, "")),
        ("no toleration, PreferNoSchedule taint", [], [taint("dedicated", "user1", "PreferNoSchedule")], (OK, "")),
        ("NoExecute filters too", [], [taint("node.kubernetes.io/unreachable", "", "NoExecute")], (UNRESOLVABLE, "node(s) had untolerated taint {node.kubernetes.io/unreachable: }")),
    ],
)
def test_taint_toleration_filter(name, tolerations, taints, expected):
    """Upstream ``TestTaintTolerationFilter``."""
    snapshot = Snapshot.of([make_node("node", taints=taints)])
    status = run_filter(TaintToleration(), make_pod("pod", tolerations=tolerations), "node", snapshot)
    assert (status.code, status.message) == expected, name


@pytest.mark.parametrize(
    ("name", "tolerations", "node_taints", "expected"),
    [
        ("tolerated taints score higher", [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
         {"node-a": [taint("foo", "bar", "PreferNoSchedule")], "node-b": [taint("foo", "blah", "PreferNoSchedule")]}, {"node-a": 100, "node-b": 0}),
        ("all tolerated: same score however many", [{"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "PreferNoSchedule"}, {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"}],
         {"node-a": [], "node-b": [taint("cpu-type", "arm64", "PreferNoSchedule")], "node-c": [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")]}, {"node-a": 100, "node-b": 100, "node-c": 100}),
        ("more intolerable taints, lower score", [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
         {"node-a": [], "node-b": [taint("cpu-type", "arm64", "PreferNoSchedule")], "node-c": [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")]}, {"node-a": 100, "node-b": 50, "node-c": 0}),
        ("only PreferNoSchedule taints count", [{"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}],
         {"node-a": [], "node-b": [taint("cpu-type", "arm64", "NoSchedule")], "node-c": [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")]}, {"node-a": 100, "node-b": 100, "node-c": 0}),
    ],
)
def test_taint_toleration_score(name, tolerations, node_taints, expected):
    """Upstream ``TestTaintTolerationScore``."""
    snapshot = Snapshot.of([make_node(node, taints=taints) for node, taints in node_taints.items()])
    assert run_score(TaintToleration(), make_pod("pod", tolerations=tolerations), snapshot) == expected, name


# =========================================================================== NodeUnschedulable / NodeName
def test_node_unschedulable_and_node_name_filters():
    """Upstream ``TestNodeUnschedulable`` and ``TestNodeName``."""
    snapshot = Snapshot.of([make_node("cordoned", unschedulable=True), make_node("open")])
    plugin = NodeUnschedulable()
    assert run_filter(plugin, make_pod("p"), "cordoned", snapshot).reasons == ("node(s) were unschedulable",)
    assert run_filter(plugin, make_pod("p"), "cordoned", snapshot).code is UNRESOLVABLE
    tolerant = make_pod("p", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}])
    assert run_filter(plugin, tolerant, "cordoned", snapshot).is_success()
    assert run_filter(plugin, make_pod("p"), "open", snapshot).is_success()
    named = make_pod("p", node_name="open")
    assert run_filter(NodeName(), named, "open", snapshot).is_success()
    assert run_filter(NodeName(), named, "cordoned", snapshot).reasons == ("node(s) didn't match the requested node name",)


# =========================================================================== NodeAffinity
def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key, operator, *values):
    requirement = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


MISMATCH = (UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector")


@pytest.mark.parametrize(
    ("name", "selector", "affinity", "labels", "expected"),
    [
        ("missing labels", {"foo": "bar"}, None, {}, MISMATCH),
        ("same labels", {"foo": "bar"}, None, {"foo": "bar"}, (OK, "")),
        ("node labels are superset", {"foo": "bar"}, None, {"foo": "bar", "baz": "blah"}, (OK, "")),
        ("node labels are subset", {"foo": "bar", "baz": "blah"}, None, {"foo": "bar"}, MISMATCH),
        ("In matches", None, required({"matchExpressions": [expr("foo", "In", "bar", "value2")]}), {"foo": "bar"}, (OK, "")),
        ("Gt matches", None, required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]}), {"kernel-version": "0206"}, (OK, "")),
        ("Gt on a non-integer label", None, required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]}), {"kernel-version": "6.1"}, MISMATCH),
        ("NotIn matches", None, required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}), {"mem-type": "DDR3"}, (OK, "")),
        ("Exists matches", None, required({"matchExpressions": [expr("GPU", "Exists")]}), {"GPU": "NVIDIA-GRID-K1"}, (OK, "")),
        ("In does not match", None, required({"matchExpressions": [expr("foo", "In", "value1", "value2")]}), {"foo": "bar"}, MISMATCH),
        ("empty term matches nothing", None, required({}), {"foo": "bar"}, MISMATCH),
        ("terms are ORed", None, required({"matchExpressions": [expr("foo", "In", "nope")]}, {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]}), {"diffkey": "value2"}, (OK, "")),
        ("expressions are ANDed", None, required({"matchExpressions": [expr("foo", "Exists"), expr("diffkey", "In", "wrong")]}), {"foo": "bar", "diffkey": "value2"}, MISMATCH),
        ("nodeSelector and affinity both hold", {"foo": "bar"}, required({"matchExpressions": [expr("foo", "Exists")]}), {"foo": "bar"}, (OK, "")),
        ("matchFields metadata.name", None, required({"matchFields": [expr("metadata.name", "In", "node")]}), {}, (OK, "")),
        ("matchFields another name", None, required({"matchFields": [expr("metadata.name", "In", "other")]}), {}, MISMATCH),
    ],
)
def test_node_affinity_filter(name, selector, affinity, labels, expected):
    """Upstream ``TestNodeAffinity`` (Filter)."""
    snapshot = Snapshot.of([make_node("node", labels=labels)])
    pod = make_pod("pod", node_selector=selector, affinity=affinity)
    status = run_filter(NodeAffinity(), pod, "node", snapshot)
    assert (status.code, status.message) == expected, name


def test_node_affinity_score_sums_weights_and_normalizes():
    """Upstream ``TestNodeAffinityPriority``, "all nodes match the preferred scheduling
    requirements of pod but with different priorities": weights 2 (foo), 4 (key) and 5
    (all three) give 2, 11, 4 -> normalized 18, 100, 36."""
    preferred = [
        {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}},
        {"weight": 4, "preference": {"matchExpressions": [expr("key", "In", "value")]}},
        {"weight": 5, "preference": {"matchExpressions": [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]}},
    ]
    pod = make_pod("pod", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})
    snapshot = Snapshot.of([
        make_node("machine1", labels={"foo": "bar"}),
        make_node("machine5", labels={"foo": "bar", "key": "value", "az": "az1"}),
        make_node("machine2", labels={"key": "value"}),
    ])
    assert run_score(NodeAffinity(), pod, snapshot) == {"machine1": 18, "machine5": 100, "machine2": 36}
    assert run_score(NodeAffinity(), make_pod("plain"), snapshot) is None  # PreScore: Skip


# =========================================================================== NodeResourcesFit
@pytest.mark.parametrize(
    ("name", "pod", "existing", "pods_allowed", "expected"),
    [
        ("no resources requested always fits", {}, {"cpu": "10m", "memory": "20"}, "32", (OK, ())),
        ("too many resources fails", {"cpu": "1m", "memory": "1"}, {"cpu": "10m", "memory": "20"}, "32", (UNSCHED, ("Insufficient cpu", "Insufficient memory"))),
        ("one resource fits, the other not", {"cpu": "2m", "memory": "1"}, {"cpu": "9m", "memory": "5"}, "32", (UNSCHED, ("Insufficient cpu",))),
        ("memory does not fit", {"cpu": "1m", "memory": "2"}, {"cpu": "5m", "memory": "19"}, "32", (UNSCHED, ("Insufficient memory",))),
        ("equal edge case", {"cpu": "5m", "memory": "1"}, {"cpu": "5m", "memory": "19"}, "32", (OK, ())),
        ("too many pods", {}, {"cpu": "1m", "memory": "1"}, "1", (UNSCHED, ("Too many pods",))),
        ("too many pods and too much cpu", {"cpu": "8m"}, {"cpu": "5m", "memory": "1"}, "1", (UNSCHED, ("Too many pods", "Insufficient cpu"))),
        ("more than the whole node is unresolvable", {"cpu": "11m"}, {"cpu": "0m"}, "32", (UNRESOLVABLE, ("Insufficient cpu",))),
    ],
)
def test_node_resources_fit_filter(name, pod, existing, pods_allowed, expected):
    """Upstream ``TestEnoughRequests`` (allocatable 10 milli-CPU, 20 bytes)."""
    node = make_node("node", cpu="10m", memory="20", pods=pods_allowed)
    running = make_pod("running", node_name="node", cpu=existing.get("cpu"), memory=existing.get("memory"))
    snapshot = Snapshot.of([node], [running])
    status = run_filter(NodeResourcesFit(), make_pod("pod", cpu=pod.get("cpu"), memory=pod.get("memory")), "node", snapshot)
    assert (status.code, status.reasons) == expected, name


def test_least_allocated_and_balanced_allocation_scores():
    """Upstream ``TestLeastAllocatedScoringStrategy`` / ``TestNodeResourcesBalancedAllocation``,
    "nothing scheduled, resources requested, differently sized nodes": a 3000m / 5000 pod
    on 4000m/10000 and 6000m/10000 nodes -> least allocated 37 and 50 ((25+50)/2, (50+50)/2);
    balanced 87 and 100 (fractions .75/.5 -> std .125; .5/.5)."""
    snapshot = Snapshot.of([make_node("node1", cpu="4000m", memory="10000"), make_node("node2", cpu="6000m", memory="10000")])
    pod = make_pod("pod", cpu="3000m", memory="5000")
    assert run_score(NodeResourcesFit(), pod, snapshot) == {"node1": 37, "node2": 50}
    assert run_score(NodeResourcesBalancedAllocation(), pod, snapshot) == {"node1": 87, "node2": 100}
    assert run_score(NodeResourcesBalancedAllocation(), make_pod("best-effort"), snapshot) is None  # Skip


def test_least_allocated_counts_missing_requests_as_100m_and_200mi():
    """``NonZeroRequested``: a pod without requests counts 100m / 200 MiB for scoring,
    so an empty-request pod on a 1-CPU node scores (900*100//1000 + mem) / 2."""
    node = make_node("node", cpu="1", memory="1000Mi")
    assert pod_requests(make_pod("p"), non_zero=True) == (100, 200 * 1024 * 1024)
    scores = run_score(NodeResourcesFit(), make_pod("p"), Snapshot.of([node]))
    assert scores == {"node": (90 + 80) // 2}


@pytest.mark.parametrize(
    ("requested", "capacity", "expected"),
    [(0, 100, 100), (25, 100, 75), (100, 100, 0), (101, 100, 0), (5, 0, 0), (1, 3, 66)],
)
def test_least_requested_score_table(requested, capacity, expected):
    assert least_requested_score(requested, capacity) == expected


def test_balanced_resource_score_oracle():
    """Against the textbook formula: (1 - population std of the capped fractions) * 100."""
    import statistics

    rng = random.Random(7)
    for _ in range(200):
        allocatable = [rng.randint(0, 10_000) for _ in range(rng.choice((2, 3)))]
        requested = [rng.randint(0, 12_000) for _ in allocatable]
        fractions = [min(1.0, r / a) for r, a in zip(requested, allocatable) if a]
        std = statistics.pstdev(fractions) if len(fractions) > 1 else 0.0
        assert abs(balanced_resource_score(requested, allocatable) - int((1 - std) * 100)) <= 1


# =========================================================================== PodTopologySpread
FOO = {"foo": "bar"}


def zoned_snapshot(existing: dict[str, int], *, extra_pods=(), missing_zone=False):
    """node-a, node-b in zone1; node-x, node-y in zone2 (node-z without a zone label if
    ``missing_zone``); ``existing`` matching pods per node."""
    nodes = [make_node("node-a", zone="zone1"), make_node("node-b", zone="zone1"), make_node("node-x", zone="zone2"), make_node("node-y", zone="zone2")]
    if missing_zone:
        nodes.append(make_node("node-z"))
    pods = [make_pod(f"p-{node}-{index}", node_name=node, labels=FOO) for node, count in existing.items() for index in range(count)]
    return Snapshot.of(nodes, [*pods, *extra_pods])


SPREAD_FAIL = (UNSCHED, "node(s) didn't match pod topology spread constraints")


@pytest.mark.parametrize(
    ("name", "constraint", "pod_labels", "existing", "expected"),
    [
        ("2/1 across zones: the fuller zone fails", spread_constraint(FOO), FOO, {"node-a": 1, "node-b": 1, "node-x": 1},
         {"node-a": SPREAD_FAIL, "node-b": SPREAD_FAIL, "node-x": (OK, ""), "node-y": (OK, "")}),
        ("2/2: every node fits", spread_constraint(FOO), FOO, {"node-a": 2, "node-y": 2},
         {"node-a": (OK, ""), "node-b": (OK, ""), "node-x": (OK, ""), "node-y": (OK, "")}),
        ("maxSkew 2 with 2/0", spread_constraint(FOO, max_skew=2), FOO, {"node-a": 2},
         {"node-a": SPREAD_FAIL, "node-b": SPREAD_FAIL, "node-x": (OK, ""), "node-y": (OK, "")}),
        ("the pod does not match its own selector", spread_constraint(FOO), {"other": "x"}, {"node-a": 1, "node-b": 1, "node-x": 1},
         {"node-a": (OK, ""), "node-b": (OK, ""), "node-x": (OK, ""), "node-y": (OK, "")}),
        ("minDomains 3 with 2 zones: the minimum counts as 0", spread_constraint(FOO, min_domains=3), FOO, {"node-a": 1, "node-x": 1},
         {"node-a": SPREAD_FAIL, "node-b": SPREAD_FAIL, "node-x": SPREAD_FAIL, "node-y": SPREAD_FAIL}),
        ("hostname key: one per node", spread_constraint(FOO, key=HOSTNAME), FOO, {"node-a": 1, "node-b": 1, "node-x": 1},
         {"node-a": SPREAD_FAIL, "node-b": SPREAD_FAIL, "node-x": SPREAD_FAIL, "node-y": (OK, "")}),
    ],
)
def test_pod_topology_spread_filter(name, constraint, pod_labels, existing, expected):
    """Upstream ``TestSingleConstraint`` (filtering_test.go): ``matching pods in the domain
    + self match - global minimum <= maxSkew``."""
    snapshot = zoned_snapshot(existing)
    pod = make_pod("incoming", labels=pod_labels, spread=[constraint])
    got = {}
    for node in expected:
        status = run_filter(PodTopologySpread(), pod, node, snapshot)
        got[node] = (status.code, status.message)
    assert got == expected, name


def test_pod_topology_spread_filter_details():
    """A node without the key is unresolvable; terminating pods and pods of another
    namespace do not count (``countPodsMatchSelector``); nodeAffinityPolicy Honor leaves
    out domains the pod cannot go to."""
    pod = make_pod("incoming", labels=FOO, spread=[spread_constraint(FOO)])
    snapshot = zoned_snapshot({"node-a": 1}, missing_zone=True)
    status = run_filter(PodTopologySpread(), pod, "node-z", snapshot)
    assert (status.code, status.message) == (UNRESOLVABLE, "node(s) didn't match pod topology spread constraints (missing required label)")
    ignored = [make_pod("gone", node_name="node-x", labels=FOO, deleting=True), make_pod("elsewhere", namespace="other", node_name="node-x", labels=FOO)]
    snapshot = zoned_snapshot({"node-a": 1, "node-x": 0}, extra_pods=ignored)
    assert not run_filter(PodTopologySpread(), pod, "node-a", snapshot).is_success()  # zone2 counts 0, not 2
    # Only zone1 is eligible for a pod selecting zone1: its minimum is zone1's own count.
    pinned = make_pod("incoming", labels=FOO, spread=[spread_constraint(FOO)], node_selector={ZONE: "zone1"})
    assert run_filter(PodTopologySpread(), pinned, "node-a", zoned_snapshot({"node-a": 2})).is_success()


def test_pod_topology_spread_score():
    """ScheduleAnyway: count * log(domains + 2) + maxSkew - 1, rounded, then
    ``100 * (max + min - s) / max``. Zones: zone1 has 2 matching pods, zone2 1, weight
    log(4): node-a/b 3, node-x 1 -> 33, 33, 100. Hostname: counts 2, 0, 1, weight log(5):
    3, 0, 2 -> 0, 100, 33. A node without the key is ignored: 0."""
    nodes = [make_node("node-a", zone="zone1"), make_node("node-b", zone="zone1"), make_node("node-x", zone="zone2")]
    pods = [make_pod("p1", node_name="node-a", labels=FOO), make_pod("p2", node_name="node-a", labels=FOO), make_pod("p3", node_name="node-x", labels=FOO)]
    snapshot = Snapshot.of(nodes, pods)
    zone = make_pod("incoming", labels=FOO, spread=[spread_constraint(FOO, when="ScheduleAnyway")])
    assert run_score(PodTopologySpread(), zone, snapshot) == {"node-a": 33, "node-b": 33, "node-x": 100}
    host = make_pod("incoming", labels=FOO, spread=[spread_constraint(FOO, key=HOSTNAME, when="ScheduleAnyway")])
    assert run_score(PodTopologySpread(), host, snapshot) == {"node-a": 0, "node-b": 100, "node-x": 33}
    with_unlabeled = Snapshot.of([*nodes, make_node("node-z")], pods)
    assert run_score(PodTopologySpread(), zone, with_unlabeled)["node-z"] == 0
    assert run_score(PodTopologySpread(), make_pod("plain"), snapshot) is None


# =========================================================================== InterPodAffinity
def test_inter_pod_affinity_filter():
    """Upstream ``TestRequiredAffinitySingleNode`` / ``TestRequiredAffinityMultipleNodes``
    (modern reasons, one per status)."""
    nodes = [make_node("node1", zone="zone1"), make_node("node2", zone="zone1"), make_node("node3", zone="zone2")]
    web = make_pod("web", node_name="node1", labels={"app": "web"})
    db = make_pod("db", node_name="node2", labels={"app": "db"})
    snapshot = Snapshot.of(nodes, [web, db])
    plugin = InterPodAffinity()

    spread_web = make_pod("web-2", labels={"app": "web"}, affinity=anti_affinity({"app": "web"}))
    assert run_filter(plugin, spread_web, "node1", snapshot).reasons == ("node(s) didn't match pod anti-affinity rules",)
    assert run_filter(plugin, spread_web, "node1", snapshot).code is UNSCHED
    assert run_filter(plugin, spread_web, "node2", snapshot).is_success()

    near_db = make_pod("cache", affinity=pod_affinity({"app": "db"}))
    assert run_filter(plugin, near_db, "node1", snapshot).is_success()  # same zone as db
    far = run_filter(plugin, near_db, "node3", snapshot)
    assert (far.code, far.reasons) == (UNRESOLVABLE, ("node(s) didn't match pod affinity rules",))

    # An existing pod's anti-affinity keeps matching pods off its zone.
    loner = make_pod("loner", node_name="node3", labels={"app": "loner"}, affinity=anti_affinity({"app": "web"}, topology_key=ZONE))
    snapshot = Snapshot.of(nodes, [web, db, loner])
    status = run_filter(plugin, make_pod("web-3", labels={"app": "web"}), "node3", snapshot)
    assert (status.code, status.reasons) == (UNSCHED, ("node(s) didn't satisfy existing pods anti-affinity rules",))

    # The first pod of a series with affinity to itself may go anywhere.
    first = make_pod("first", labels={"app": "series"}, affinity=pod_affinity({"app": "series"}))
    assert run_filter(plugin, first, "node3", snapshot).is_success()
    # ... but not when it does not match its own terms.
    stranger = make_pod("stranger", labels={"app": "other"}, affinity=pod_affinity({"app": "series"}))
    assert not run_filter(plugin, stranger, "node3", snapshot).is_success()


def test_inter_pod_affinity_namespaces_and_selector():
    """Terms apply to the pod's own namespace unless namespaces or a namespaceSelector say
    otherwise (``getNamespacesFromPodAffinityTerm``)."""
    nodes = [make_node("node1"), make_node("node2")]
    other_ns = make_pod("web", namespace="other", node_name="node1", labels={"app": "web"})
    plugin = InterPodAffinity()
    mine = make_pod("web-2", labels={"app": "web"}, affinity=anti_affinity({"app": "web"}))
    assert run_filter(plugin, mine, "node1", Snapshot.of(nodes, [other_ns])).is_success()
    term = anti_affinity({"app": "web"})
    term["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    selecting = make_pod("web-3", labels={"app": "web"}, affinity=term)
    snapshot = Snapshot.of(nodes, [other_ns], namespace_labels={"other": {"team": "a"}})
    assert not run_filter(plugin, selecting, "node1", snapshot).is_success()


# =========================================================================== framework
def fake_handle(snapshot, *, nominated=None, pdbs=(), pods=(), seed=1, now=100.0):
    class Handle:
        def snapshot(self):
            return snapshot

        def nominated_pods_for_node(self, node):
            return list((nominated or {}).get(node, []))

        def pod_disruption_budgets(self):
            return list(pdbs)

        def get_pod(self, key):
            return next((p for p in pods if f"{p.metadata.namespace}/{p.metadata.name}" == key), None)

        def now(self):
            return now

        def random(self):
            return self._random

    handle = Handle()
    handle._random = random.Random(seed)
    return handle


def test_fit_error_message_is_upstreams():
    """``FitError.Error``: sorted "count reason" strings (as strings: "10" < "2"), then
    the PostFilter message as is; a PreFilter message replaces the histogram."""
    statuses = NodeToStatus({f"n{i}": Status.of(UNSCHED, "Insufficient cpu") for i in range(10)})
    statuses.set("t1", Status.of(UNRESOLVABLE, "node(s) had untolerated taint {key: value}"))
    statuses.set("t2", Status.of(UNRESOLVABLE, "node(s) had untolerated taint {key: value}"))
    diagnosis = Diagnosis(statuses, post_filter_msg="preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling.")
    assert str(FitError(make_pod("p"), 12, diagnosis)) == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint {key: value}. "
        "preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling."
    )
    pre = Diagnosis(NodeToStatus({}, Status.of(UNRESOLVABLE, "x")), pre_filter_msg="pod has unbound immediate PersistentVolumeClaims")
    assert str(FitError(make_pod("p"), 3, pre)) == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."


def test_the_brief_example_message_end_to_end_in_the_framework():
    """1 node too small (unresolvable), 2 tainted: nothing preemption can do."""
    nodes = [make_node("n1", cpu="1"), *(make_node(f"n{i}", taints=[taint("key", "value")]) for i in (2, 3))]
    snapshot = Snapshot.of(nodes)
    pod = make_pod("p", cpu="2")
    framework = Framework(default_plugins(None), handle=fake_handle(snapshot, pods=[pod]))
    state = CycleState()
    with pytest.raises(FitError) as caught:
        schedule_pod(framework, state, pod, snapshot, random.Random(1))
    result, status = framework.run_post_filter_plugins(state, pod, caught.value.diagnosis.node_to_status)
    caught.value.diagnosis.post_filter_msg = status.message
    assert str(caught.value) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {key: value}. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert result is not None and result.nominating.override and result.nominating.node_name == ""
    assert caught.value.diagnosis.unschedulable_plugins == {"NodeResourcesFit", "TaintToleration"}


def test_filters_stop_at_the_first_failure_in_profile_order():
    """``RunFilterPlugins``: a tainted node that is also too small reports the taint only."""
    snapshot = Snapshot.of([make_node("n", cpu="1", taints=[taint("k", "v")])])
    framework = Framework(default_plugins(None), handle=fake_handle(snapshot))
    state = CycleState(snapshot)
    framework.run_pre_filter_plugins(state, make_pod("p", cpu="2"), snapshot)
    status = framework.run_filter_plugins(state, make_pod("p", cpu="2"), snapshot.get("n"))
    assert (status.plugin, status.reasons) == ("TaintToleration", ("node(s) had untolerated taint {k: v}",))


@pytest.mark.parametrize(("incoming", "fits"), [(0, False), (10, False), (20, True)])
def test_nominated_pods_of_higher_or_equal_priority_hold_their_room(incoming, fits):
    """``RunFilterPluginsWithNominatedPods``: a nominated pod of priority >= the pod's
    counts on its node."""
    snapshot = Snapshot.of([make_node("n", cpu="1")])
    nominated = make_pod("preemptor", cpu="1", priority=10, nominated="n")
    framework = Framework(default_plugins(None), handle=fake_handle(snapshot, nominated={"n": [nominated]}))
    pod = make_pod("p", cpu="1", priority=incoming)
    state = CycleState(snapshot)
    framework.run_pre_filter_plugins(state, pod, snapshot)
    assert framework.run_filter_plugins_with_nominated_pods(state, pod, snapshot.get("n")).is_success() is fits


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [(5, 0, 5), (99, 0, 99), (100, 0, 100), (500, 0, 230), (1000, 0, 420), (3000, 0, 780), (5000, 0, 500), (6000, 0, 300), (1000, 50, 500), (1000, 5, 100)],
)
def test_num_feasible_nodes_to_find(nodes, percentage, expected):
    """``numFeasibleNodesToFind``: adaptive ``max(50 - n/125, 5)`` %, never below 100."""
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_select_host_breaks_ties_with_the_seeded_generator():
    totals = {"a": 5, "b": 7, "c": 7}
    picks = {select_host(totals, random.Random(seed)) for seed in range(40)}
    assert picks == {"b", "c"}
    assert select_host({"a": 1, "b": 0}, random.Random(3)) == "a"
    assert [select_host(totals, random.Random(seed)) for seed in range(10)] == [select_host(totals, random.Random(seed)) for seed in range(10)]


def test_default_normalize_score():
    scores = {"a": 2, "b": 11, "c": 0}
    default_normalize_score(100, False, scores)
    assert scores == {"a": 18, "b": 100, "c": 0}
    scores = {"a": 0, "b": 0}
    default_normalize_score(100, True, scores)
    assert scores == {"a": 100, "b": 100}


def test_schedule_pod_spreads_the_search_and_prefers_the_nominated_node():
    nodes = [make_node(f"n{i}") for i in range(4)]
    snapshot = Snapshot.of(nodes)
    framework = Framework(default_plugins(None), handle=fake_handle(snapshot))
    result = schedule_pod(framework, CycleState(), make_pod("p", nominated="n2"), snapshot, random.Random(1))
    assert (result.suggested_host, result.feasible_nodes) == ("n2", 1)
    with pytest.raises(NoNodesAvailable):
        schedule_pod(framework, CycleState(), make_pod("p"), Snapshot([]), random.Random(1))


def test_node_tree_order_interleaves_zones():
    nodes = [make_node(name, zone=zone) for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]]
    assert node_tree_order(nodes) == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_cache_assume_confirm_forget_and_incremental_snapshots():
    cache = SchedulerCache()
    cache.add_node(make_node("n1", cpu="2"))
    cache.add_node(make_node("n2", cpu="2"))
    first = cache.snapshot()
    assumed = make_pod("p", cpu="1", node_name="n1")
    cache.assume_pod(assumed)
    second = cache.snapshot()
    assert second.get("n1").requested.milli_cpu == 1000 and first.get("n1").requested.milli_cpu == 0
    assert second.get("n2") is first.get("n2")  # unchanged node: not cloned again
    cache.forget_pod(assumed)
    assert cache.snapshot().get("n1").requested.milli_cpu == 0
    cache.assume_pod(assumed)
    cache.add_pod(assumed)  # the informer saw it bound: confirmed
    assert not cache.is_assumed(assumed)
    with pytest.raises(Exception, match="wasn't assumed"):
        cache.forget_pod(assumed)
    cache.remove_node("n1")  # a pod still points at it: kept as a ghost, not listed
    assert [info.name for info in cache.snapshot().list()] == ["n2"]
    cache.remove_pod(assumed)
    assert cache.pod_count() == 0


# =========================================================================== preemption
def pdb(name, labels, allowed, *, namespace="default", disrupted=None, selector=True):
    body = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": labels} if selector else {}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted or {}},
    }
    return from_dict(body)


def test_filter_pods_with_pdb_violation():
    """``filterPodsWithPDBViolation``: each matching pod uses one of the budget; past zero
    it violates; pods in ``disruptedPods`` and PDBs with empty selectors or another
    namespace do not count."""
    pods = [PodInfo(make_pod(name, labels={"app": "a"})) for name in ("p1", "p2", "p3")]
    violating, fine = filter_pods_with_pdb_violation(pods, [pdb("budget", {"app": "a"}, 1)])
    assert [i.pod.metadata.name for i in violating] == ["p2", "p3"] and [i.pod.metadata.name for i in fine] == ["p1"]
    violating, _ = filter_pods_with_pdb_violation(pods, [pdb("budget", {"app": "a"}, 1, disrupted={"p1": "2026-01-01T00:00:00Z"})])
    assert [i.pod.metadata.name for i in violating] == ["p3"]
    for budget in (pdb("empty", {}, 0, selector=False), pdb("elsewhere", {"app": "a"}, 0, namespace="other")):
        assert filter_pods_with_pdb_violation(pods, [budget])[0] == []


def test_a_node_remembers_its_selector_counts_until_its_pods_change():
    """``NodeInfo.count_matching`` is ``countPodsMatchSelector`` over the node's pods (its
    namespace, no terminating pods), remembered per (namespace, selector) and dropped when
    a pod is added or removed; a clone answers the same and changes on its own."""
    from chaoskube.api.objects import LabelSelector

    selector = LabelSelector(match_labels={"app": "a"})
    key = selector_key(selector)
    info = NodeInfo(make_node("n"))
    for name, labels, namespace in (("p1", {"app": "a"}, "default"), ("p2", {"app": "b"}, "default"), ("p3", {"app": "a"}, "other")):
        info.add_pod(PodInfo(make_pod(name, labels=labels, namespace=namespace)))
    assert info.count_matching(selector, key, "default") == 1 and info.count_matching(selector, key, "other") == 1
    assert info.count_matching(None, selector_key(None), "default") == 0
    clone = info.clone()
    info.add_pod(PodInfo(make_pod("p4", labels={"app": "a"})))
    assert info.count_matching(selector, key, "default") == 2 and clone.count_matching(selector, key, "default") == 1
    info.remove_pod("default/p1")
    assert info.count_matching(selector, key, "default") == 1
    assert selector_key(LabelSelector(match_labels={"x": "1", "app": "a"})) == selector_key(LabelSelector(match_labels={"app": "a", "x": "1"}))


def candidate(node, *victims, pdb_violations=0):
    return Candidate(node, tuple(make_pod(f"{node}-{i}", priority=p, start_time=s) for i, (p, s) in enumerate(victims)), pdb_violations)


T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


@pytest.mark.parametrize(
    ("name", "candidates", "expected"),
    [
        ("fewest PDB violations first", [candidate("a", (1, T0), pdb_violations=1), candidate("b", (50, T0))], "b"),
        ("lowest highest-priority victim", [candidate("a", (30, T0)), candidate("b", (20, T0), (20, T0))], "b"),
        ("smallest sum of priorities", [candidate("a", (20, T0), (10, T0)), candidate("b", (20, T0), (5, T0))], "b"),
        ("fewest victims", [candidate("a", (0, T0), (0, T0)), candidate("b", (0, T0))], "b"),
        ("latest start of the highest-priority victims", [candidate("a", (10, T0), (5, T2)), candidate("b", (10, T1), (5, T0))], "b"),
        ("still tied: the first", [candidate("a", (10, T0)), candidate("b", (10, T0))], "a"),
    ],
)
def test_pick_one_node_for_preemption(name, candidates, expected):
    """``pickOneNodeForPreemption``'s criteria, one per case."""
    assert pick_one_node_for_preemption(candidates, now=1000.0).node_name == expected, name


@pytest.mark.parametrize(("nodes", "expected"), [(1, 1), (50, 50), (100, 100), (999, 100), (2000, 200)])
def test_calculate_num_candidates(nodes, expected):
    assert calculate_num_candidates(nodes) == expected


def preemption_setup(pods, *, node_cpu="2", pdbs=(), nodes=None):
    nodes = nodes or [make_node("n", cpu=node_cpu)]
    snapshot = Snapshot.of(nodes, [p for p in pods if p.spec.node_name])
    framework = Framework(default_plugins(None), handle=fake_handle(snapshot, pdbs=pdbs, pods=pods))
    return framework, snapshot, framework.plugin("DefaultPreemption")


def test_select_victims_reprieves_the_most_important_first():
    """``SelectVictimsOnNode``: remove all lower-priority pods, put back the most important
    first; a PDB-protected pod is put back before the others."""
    low = make_pod("low", node_name="n", cpu="1", priority=1, labels={"app": "low"}, start_time=T0)
    mid = make_pod("mid", node_name="n", cpu="1", priority=2, labels={"app": "mid"}, start_time=T0)
    preemptor = make_pod("vip", cpu="1", priority=50)
    framework, snapshot, plugin = preemption_setup([low, mid, preemptor])
    state = CycleState(snapshot)
    framework.run_pre_filter_plugins(state, preemptor, snapshot)
    victims, violations, status = plugin.select_victims_on_node(state, preemptor, snapshot.get("n").clone(), [])
    assert status.is_success() and [v.metadata.name for v in victims] == ["low"] and violations == 0
    guarded = [pdb("guard", {"app": "low"}, 0)]
    victims, violations, _ = plugin.select_victims_on_node(state.clone(), preemptor, snapshot.get("n").clone(), guarded)
    assert [v.metadata.name for v in victims] == ["mid"] and violations == 0
    both = [pdb("guard", {"app": "low"}, 0), pdb("guard2", {"app": "mid"}, 0)]
    big = make_pod("big", cpu="2", priority=50)
    victims, violations, _ = plugin.select_victims_on_node(state.clone(), big, snapshot.get("n").clone(), both)
    assert sorted(v.metadata.name for v in victims) == ["low", "mid"] and violations == 2


def test_preemption_prefers_the_node_whose_victim_no_pdb_protects():
    protected = make_pod("protected", node_name="n1", cpu="1", priority=100, labels={"app": "db"})
    free = make_pod("free", node_name="n2", cpu="1", priority=100, labels={"app": "batch"})
    preemptor = make_pod("vip", cpu="1", priority=1000)
    nodes = [make_node("n1", cpu="1"), make_node("n2", cpu="1")]
    framework, snapshot, plugin = preemption_setup([protected, free, preemptor], nodes=nodes, pdbs=[pdb("db", {"app": "db"}, 0)])
    state = CycleState()
    with pytest.raises(FitError) as caught:
        schedule_pod(framework, state, preemptor, snapshot, random.Random(1))
    result, status = framework.run_post_filter_plugins(state, preemptor, caught.value.diagnosis.node_to_status)
    assert status.is_success()
    assert result.nominating.node_name == "n2" and [v.metadata.name for v in result.victims] == ["free"]


@pytest.mark.parametrize(
    ("name", "preemptor", "running", "message"),
    [
        ("preemptionPolicy Never", make_pod("vip", cpu="1", priority=1000, preemption_policy="Never"), [make_pod("low", node_name="n", cpu="2", priority=1)],
         "preemption: not eligible due to preemptionPolicy=Never."),
        ("a victim still terminating on the nominated node", make_pod("vip", cpu="1", priority=1000, nominated="n"),
         [make_pod("low", node_name="n", cpu="2", priority=1, deleting=True, conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}])],
         "preemption: not eligible due to a terminating pod on the nominated node."),
        ("nobody of lower priority", make_pod("vip", cpu="1", priority=0), [make_pod("same", node_name="n", cpu="2", priority=0)],
         "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
        ("too big even for an empty node", make_pod("vip", cpu="3", priority=1000), [make_pod("low", node_name="n", cpu="2", priority=1)],
         "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    ],
)
def test_preemption_refusals(name, preemptor, running, message):
    framework, snapshot, _ = preemption_setup([*running, preemptor])
    state = CycleState()
    with pytest.raises(FitError) as caught:
        schedule_pod(framework, state, preemptor, snapshot, random.Random(1))
    result, status = framework.run_post_filter_plugins(state, preemptor, caught.value.diagnosis.node_to_status)
    assert status.code is UNSCHED and status.message == message, name
    assert result is None or not result.victims


def test_the_preemption_plugin_needs_a_framework():
    with pytest.raises(AssertionError):
        DefaultPreemption().preempt(CycleState(), make_pod("p"), NodeToStatus())
    assert isinstance(NodeInfo(make_node("n")).allocatable.milli_cpu, int)

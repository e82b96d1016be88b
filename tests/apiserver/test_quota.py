"""ResourceQuota and LimitRanger admission: the pure rules of ``chaoskube.api.quota`` in
upstream's words, and both plugins through the API server's front door."""

from __future__ import annotations

from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import LimitRange, Pod, ResourceQuota
from chaoskube.api.quota import LIMIT_RANGER_ANNOTATION, check_quota, limit_range_defaults, limit_range_problems, recalculate, usage
from tests.apiserver.apiserver_harness import run_api


def pod(name: str = "web", *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, init: list[dict[str, Any]] = ()) -> Pod:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"containers": [{"name": "web", "image": "nginx", "resources": resources}], "initContainers": list(init)}})  # type: ignore[return-value]


def quota(hard: dict[str, str], used: dict[str, str] | None = None, name: str = "compute", scopes: list[str] = ()) -> ResourceQuota:
    return from_dict({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"hard": hard, "scopes": list(scopes)}, "status": {"hard": hard, "used": used if used is not None else {k: "0" for k in hard}}})  # type: ignore[return-value]


def limit_range(*items: dict[str, Any], name: str = "limits") -> LimitRange:
    return from_dict({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name, "namespace": "default"}, "spec": {"limits": list(items)}})  # type: ignore[return-value]


# --------------------------------------------------------------------------- quota


def test_a_pod_uses_its_count_and_its_requests_and_limits() -> None:
    got = usage(pod(requests={"cpu": "250m", "memory": "64Mi"}, limits={"cpu": "1"}), "pods")
    assert got["pods"] == 1000 and got["count/pods"] == 1000
    assert got["requests.cpu"] == 250 and got["cpu"] == 250 and got["limits.cpu"] == 1000
    assert got["requests.memory"] == 64 * 1024 * 1024 * 1000


def test_exceeded_quota_in_upstreams_words() -> None:
    refusal, charges = check_quota([quota({"pods": "2"}, {"pods": "2"})], pod(), "pods")
    assert refusal == "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2" and charges == []
    refusal, _ = check_quota([quota({"requests.cpu": "1"}, {"requests.cpu": "900m"})], pod(requests={"cpu": "200m"}), "pods")
    assert refusal == "exceeded quota: compute, requested: requests.cpu=200m, used: requests.cpu=900m, limited: requests.cpu=1"


def test_a_quota_on_cpu_needs_every_container_to_state_it() -> None:
    refusal, _ = check_quota([quota({"limits.cpu": "2", "requests.memory": "1Gi"})], pod(), "pods")
    assert refusal == "failed quota: compute: must specify limits.cpu for: web; requests.memory for: web"


def test_a_quota_admits_and_charges_what_fits() -> None:
    q = quota({"pods": "3", "requests.cpu": "1"}, {"pods": "1", "requests.cpu": "100m"})
    refusal, charges = check_quota([q], pod(requests={"cpu": "300m"}), "pods")
    assert refusal is None and charges == [(q, {"pods": 1000, "requests.cpu": 300})]


def test_scopes_select_the_pods_a_quota_counts() -> None:
    best_effort = quota({"pods": "1"}, {"pods": "1"}, scopes=["BestEffort"])
    assert check_quota([best_effort], pod(requests={"cpu": "1"}), "pods") == (None, [])  # not BestEffort: not counted
    assert check_quota([best_effort], pod(), "pods")[0] is not None


def test_the_controller_recalculates_usage() -> None:
    q = quota({"pods": "10", "requests.cpu": "4", "services": "2"})
    used = recalculate(q, [("pods", pod("a", requests={"cpu": "500m"})), ("pods", pod("b", requests={"cpu": "1"}))])
    assert used == {"pods": "2", "requests.cpu": "1500m", "services": "0"}


# --------------------------------------------------------------------------- LimitRanger


def test_defaults_fill_what_containers_leave_out_and_say_so() -> None:
    lr = limit_range({"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "100m"}})
    p = pod(limits={"memory": "256Mi"})
    phrases = limit_range_defaults([lr], p)
    resources = p.spec.containers[0].resources
    assert resources.requests == {"cpu": "100m", "memory": "256Mi"} and resources.limits == {"memory": "256Mi", "cpu": "500m"}
    assert phrases == ["cpu, memory request for container web", "cpu limit for container web"]


@pytest.mark.parametrize(("item", "the_pod", "expected"), [
    ({"type": "Container", "min": {"cpu": "100m"}}, pod(), ["minimum cpu usage per Container is 100m.  No request is specified"]),
    ({"type": "Container", "min": {"cpu": "100m"}}, pod(requests={"cpu": "50m"}), ["minimum cpu usage per Container is 100m, but request is 50m"]),
    ({"type": "Container", "max": {"cpu": "1"}}, pod(), ["maximum cpu usage per Container is 1.  No limit is specified"]),
    ({"type": "Container", "max": {"cpu": "1"}}, pod(limits={"cpu": "2"}), ["maximum cpu usage per Container is 1, but limit is 2"]),
    ({"type": "Container", "maxLimitRequestRatio": {"memory": "2"}}, pod(requests={"memory": "100Mi"}, limits={"memory": "400Mi"}),
     ["memory max limit to request ratio per Container is 2, but provided ratio is 4.000000"]),
    ({"type": "Container", "maxLimitRequestRatio": {"memory": "2"}}, pod(limits={"memory": "1Gi"}),
     ["memory max limit to request ratio per Container is 2, but no request is specified or request is 0"]),
    ({"type": "Pod", "max": {"cpu": "1"}}, pod(limits={"cpu": "800m"}, init=[{"name": "setup", "image": "busybox", "resources": {"limits": {"cpu": "1500m"}}}]),
     ["maximum cpu usage per Pod is 1, but limit is 1500m"]),  # an init container's need counts when it is the larger
    ({"type": "Container", "max": {"cpu": "1"}}, pod(limits={"cpu": "500m"}, init=[{"name": "setup", "image": "busybox", "resources": {"limits": {"cpu": "2"}}}]),
     ["maximum cpu usage per Container is 1, but limit is 2"]),
])
def test_constraints_in_upstreams_words(item: dict[str, Any], the_pod: Pod, expected: list[str]) -> None:
    assert limit_range_problems([limit_range(item)], the_pod) == [expected]


def test_a_claim_is_held_to_its_storage_bounds() -> None:
    claim = from_dict({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
                       "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "50Gi"}}}})
    lr = limit_range({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}})
    assert limit_range_problems([lr], claim) == [["maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 50Gi"]]


# --------------------------------------------------------------------------- the front door


def test_both_plugins_through_the_api_server() -> None:
    async def story(world: Any, api: Any, registry: Any) -> Any:
        lr = limit_range({"type": "Container", "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "100m"}, "max": {"cpu": "1"}})
        assert (await api("create", "limitranges", namespace="default", body=lr)).code == 201
        q = quota({"pods": "2"})
        made = await api("create", "resourcequotas", namespace="default", body=q)
        assert made.code == 201, made.status
        # the resourcequota controller would fill status.hard/used; here by hand
        made.object.status.hard = {"pods": "2"}
        made.object.status.used = {"pods": "0"}
        assert (await api("update", "resourcequotas", namespace="default", name="compute", subresource="status", body=made.object)).code == 200
        await api.eventually("get", "resourcequotas", lambda r: r.ok and r.object.status.hard, namespace="default", name="compute", resource_version="0")
        await api.eventually("get", "limitranges", lambda r: r.ok, namespace="default", name="limits", resource_version="0")
        first = await api("create", "pods", namespace="default", body=pod("a"))
        too_big = await api("create", "pods", namespace="default", body=pod("big", limits={"cpu": "2"}))
        second = await api("create", "pods", namespace="default", body=pod("b"))
        third = await api("create", "pods", namespace="default", body=pod("c"))
        charged = await api("get", "resourcequotas", namespace="default", name="compute")
        return first, too_big, second, third, charged

    _, (first, too_big, second, third, charged) = run_api(story)
    assert first.code == 201
    resources = first.object.spec.containers[0].resources
    assert (resources.requests, resources.limits) == ({"cpu": "100m"}, {"cpu": "200m"})
    assert first.object.metadata.annotations[LIMIT_RANGER_ANNOTATION] == "LimitRanger plugin set: cpu request for container web; cpu limit for container web"
    assert too_big.code == 403
    assert too_big.status.message == 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    assert second.code == 201
    assert third.code == 403
    assert third.status.message == 'pods "c" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2'
    assert charged.object.status.used == {"pods": "2"}

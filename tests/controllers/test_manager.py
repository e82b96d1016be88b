"""kube-controller-manager as a whole: leader-elected replicas, one acting; the
serviceaccount controller; failover keeps reconciling."""

from chaoskube.api.manifests import from_dict
from chaoskube.checkers.leader_election import check_leader_election
from chaoskube.controllers.manager import controller_manager_main
from tests.apiserver.apiserver_harness import run_api

SERVERS = ["kube-apiserver-1", "kube-apiserver-2"]


def deployment(name, replicas=2):
    labels = {"app": name}
    return from_dict({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    })


def acting(world):
    leaders = {}
    for event in world.journal.events:
        if event["type"] == "leader" and event["event"] in ("start", "stop"):
            leaders[event["process"]] = event["event"] == "start"
    return sorted(name for name, on in leaders.items() if on and world.processes[name].alive)


def test_one_replica_acts_and_a_new_one_takes_over_after_a_kill():
    async def story(world, api, registry):
        await api("create", "namespaces", body=from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
        account = await api.eventually("get", "serviceaccounts", lambda r: r.code == 200, namespace="team", name="default", within_s=40)
        await api("create", "deployments", namespace="default", body=deployment("first"))
        first = await api.eventually("list", "pods", lambda r: len(r.items) == 2, namespace="default", label_selector="app=first", within_s=30)
        [leader] = acting(world)
        world.process(leader).kill()
        killed_at = world.now
        await api("create", "deployments", namespace="default", body=deployment("second"))
        second = await api.eventually("list", "pods", lambda r: len(r.items) == 2, namespace="default", label_selector="app=second", within_s=60)
        return account, first, leader, killed_at, second, acting(world)

    processes = [(f"kube-controller-manager-{index}", controller_manager_main(SERVERS)) for index in (1, 2)]
    world, (account, first, leader, killed_at, second, now_acting) = run_api(story, servers=2, processes=processes)
    assert account.code == 200
    assert all(pod.metadata.owner_references[0].kind == "ReplicaSet" for pod in first.items)
    assert len(now_acting) == 1 and now_acting[0] != leader
    verdict = check_leader_election(world.journal.events)
    assert verdict.valid is True, verdict.reason
    starts = [e for e in world.journal.events if e["type"] == "leader" and e["event"] == "start" and e["process"] == now_acting[0]]
    assert starts and starts[-1]["t"] - killed_at < 15 + 2 * 4.4

"""pdb-keeper: a small kopf operator that keeps a PodDisruptionBudget beside every
Deployment labelled ``pdb-keeper=on`` (``minAvailable`` from the annotation
``pdb-keeper/min-available``, default 1) and removes the budgets of Deployments that are
gone. Written for docs/operators.md, with a real bug of the kind Sieve reports (a stale
view of the cluster), and its fix in pdb_keeper_fixed.py.

The bug: the operator's view of the Deployments is a dictionary fed only by watch events
(``@kopf.on.event``). kopf re-lists after its watch stream breaks (an API server killed
under it), and a relist yields the objects that exist -- but no DELETED event for an
object deleted while the stream was down. The dictionary keeps the deleted Deployment for
ever, and the reconcile loop keeps (and re-creates) its budget: a PodDisruptionBudget that
outlives its Deployment, and blocks evictions of any later pods that match it.

    pip install kopf kubernetes
    kopf run --standalone -A pdb_keeper.py
"""

import asyncio

import kopf
import kubernetes

LABEL = "pdb-keeper"
MANAGED = "pdb-keeper/owner"
#: The operator's view of the Deployments it keeps: (namespace, name) -> minAvailable.
SEEN: dict[tuple[str, str], int] = {}


@kopf.on.startup()
async def start(settings: kopf.OperatorSettings, logger, **_):
    settings.posting.enabled = False  # no Events: keep the journal about the budgets
    settings.watching.server_timeout = 60
    kubernetes.config.load_kube_config()
    asyncio.get_running_loop().create_task(reconcile_forever(logger))


@kopf.on.event("apps", "v1", "deployments", labels={LABEL: "on"})
def remember(event, name, namespace, body, **_):
    if event["type"] == "DELETED":
        SEEN.pop((namespace, name), None)
    else:
        SEEN[(namespace, name)] = int(body["metadata"].get("annotations", {}).get("pdb-keeper/min-available", "1"))


def reconcile_once(logger) -> None:
    policy = kubernetes.client.PolicyV1Api()
    budgets = policy.list_pod_disruption_budget_for_all_namespaces(label_selector=MANAGED).items
    have = {(b.metadata.namespace, b.metadata.name) for b in budgets}
    for (namespace, name), min_available in sorted(SEEN.items()):  # the stale view
        if (namespace, f"{name}-pdb") not in have:
            body = {
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": f"{name}-pdb", "labels": {MANAGED: name}},
                "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}},
            }
            try:
                policy.create_namespaced_pod_disruption_budget(namespace, body)
                logger.info(f"created {namespace}/{name}-pdb")
            except kubernetes.client.ApiException as error:
                if error.status != 409:
                    raise
    for budget in budgets:
        owner = (budget.metadata.namespace, budget.metadata.labels[MANAGED])
        if owner not in SEEN:
            policy.delete_namespaced_pod_disruption_budget(budget.metadata.name, budget.metadata.namespace)
            logger.info(f"deleted {budget.metadata.namespace}/{budget.metadata.name}")


async def reconcile_forever(logger) -> None:
    while True:
        try:
            await asyncio.to_thread(reconcile_once, logger)
        except Exception as error:  # the API may be down: try again
            logger.warning(f"reconcile failed: {error}")
        await asyncio.sleep(1.0)

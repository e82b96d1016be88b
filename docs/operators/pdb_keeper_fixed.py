"""pdb-keeper, fixed: the same operator, level-triggered. Each pass derives the Deployments
from a fresh list (a quorum read through the API server), not from the watch events it
happened to see, so a Deployment deleted while the watch was down is noticed at the next
pass and its budget removed. (Alternatives with the same effect: an ownerReference on the
budget, so Kubernetes' garbage collector removes it; or ``@kopf.on.delete``, whose
finalizer makes the deletion impossible to miss.) See docs/operators.md.

    kopf run --standalone -A pdb_keeper_fixed.py
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
    apps = kubernetes.client.AppsV1Api()
    fresh = apps.list_deployment_for_all_namespaces(label_selector=f"{LABEL}=on").items
    SEEN.clear()  # the fix: the view is what the API says now, not what the events said
    for deployment in fresh:
        annotations = deployment.metadata.annotations or {}
        SEEN[(deployment.metadata.namespace, deployment.metadata.name)] = int(annotations.get("pdb-keeper/min-available", "1"))
    policy = kubernetes.client.PolicyV1Api()
    budgets = policy.list_pod_disruption_budget_for_all_namespaces(label_selector=MANAGED).items
    have = {(b.metadata.namespace, b.metadata.name) for b in budgets}
    for (namespace, name), min_available in sorted(SEEN.items()):
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

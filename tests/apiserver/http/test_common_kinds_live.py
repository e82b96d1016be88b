"""The common kinds and custom resources through the HTTPS front, with real clients:
kubectl applies a StatefulSet with volumeClaimTemplates, a DaemonSet, a Job, a CronJob, a
ConfigMap, a Secret and a CRD with custom objects, waits for their rollouts, prints their
tables, scales, patches (containers merged by name; a custom object by merge patch), and
explains a custom kind from its schema; the official Python client reads every one of them
(CustomObjectsApi included)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.apiserver.http.live_cluster import live_cluster

KUBECTL = shutil.which("kubectl")

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: promotions.shop.example.com}
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: promotions, singular: promotion, kind: Promotion, shortNames: [promo]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Discount, type: integer, jsonPath: .spec.discountPercent}
    - {name: Audience, type: string, jsonPath: .spec.audience}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [discountPercent]
            properties:
              discountPercent: {type: integer, minimum: 1, maximum: 90, description: Percent off.}
              audience: {type: string, enum: [everyone, members], default: everyone}
          status:
            type: object
            properties:
              redemptions: {type: integer}
"""

APP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: pg
        image: postgres:15
        envFrom: [{configMapRef: {name: settings}}]
        env: [{name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}]
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]
      - {name: exporter, image: "exporter:1"}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "agent:1"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  completions: 2
  template:
    metadata: {annotations: {chaoskube.io/exit-after: "2"}}  # the simulated container exits 0 after 2 s
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "migrate:1"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: busybox}]
"""

PROMOTIONS = """
apiVersion: shop.example.com/v1
kind: Promotion
metadata: {name: spring-sale}
spec: {discountPercent: 20}
---
apiVersion: shop.example.com/v1
kind: Promotion
metadata: {name: members-week}
spec: {discountPercent: 15, audience: members}
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine (the machine image has /usr/bin/kubectl)")
    with live_cluster(tmp_path_factory.mktemp("live-kinds")) as (handle, outcome):
        yield handle
    assert outcome.get("result") is not None, outcome.get("error")


def kubectl(live, *args: str, stdin: str | None = None, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result


def test_kubectl_with_the_common_kinds_and_a_custom_resource(live):
    out = kubectl(live, "apply", "-f", "-", stdin=CRD).stdout
    assert "customresourcedefinition.apiextensions.k8s.io/promotions.shop.example.com created" in out
    kubectl(live, "wait", "--for=condition=Established", "crd/promotions.shop.example.com", "--timeout=30s", timeout=40)
    out = kubectl(live, "apply", "-f", "-", stdin=APP + "---" + PROMOTIONS).stdout
    for created in ("statefulset.apps/db created", "daemonset.apps/agent created", "job.batch/migrate created", "cronjob.batch/report created",
                    "configmap/settings created", "secret/creds created", "promotion.shop.example.com/spring-sale created"):
        assert created in out, out
    kubectl(live, "rollout", "status", "statefulset/db", "--timeout=120s", timeout=150)
    kubectl(live, "rollout", "status", "daemonset/agent", "--timeout=60s", timeout=90)
    kubectl(live, "wait", "--for=condition=Complete", "job/migrate", "--timeout=60s", timeout=90)

    # Tables, as kubectl get prints them (server-side printing)
    sts = kubectl(live, "get", "statefulsets").stdout.splitlines()
    assert sts[0].split() == ["NAME", "READY", "AGE"] and sts[1].split()[:2] == ["db", "2/2"]
    pvcs = kubectl(live, "get", "pvc").stdout.splitlines()
    assert pvcs[0].split()[:3] == ["NAME", "STATUS", "VOLUME"] and sorted(line.split()[0] for line in pvcs[1:]) == ["data-db-0", "data-db-1"]
    assert all(line.split()[1] == "Bound" for line in pvcs[1:])
    jobs = kubectl(live, "get", "jobs").stdout.splitlines()
    assert jobs[0].split()[:3] == ["NAME", "STATUS", "COMPLETIONS"] and jobs[1].split()[:3] == ["migrate", "Complete", "2/2"]
    promotions = kubectl(live, "get", "promo").stdout.splitlines()
    assert promotions[0].split() == ["NAME", "DISCOUNT", "AUDIENCE"]
    assert sorted(line.split() for line in promotions[1:]) == [["members-week", "15", "members"], ["spring-sale", "20", "everyone"]]  # defaulted by the schema

    # scale through the scale subresource; strategic merge patch keeps the other container
    kubectl(live, "scale", "statefulset/db", "--replicas=3")
    kubectl(live, "rollout", "status", "statefulset/db", "--timeout=120s", timeout=150)
    kubectl(live, "set", "image", "statefulset/db", "pg=postgres:16")
    images = kubectl(live, "get", "statefulset", "db", "-o", "jsonpath={.spec.template.spec.containers[*].image}").stdout.split()
    assert images == ["postgres:16", "exporter:1"]
    kubectl(live, "patch", "statefulset", "db", "-p", '{"spec":{"template":{"spec":{"containers":[{"name":"exporter","image":"exporter:2"}]}}}}')
    images = kubectl(live, "get", "statefulset", "db", "-o", "jsonpath={.spec.template.spec.containers[*].image}").stdout.split()
    assert images == ["postgres:16", "exporter:2"]

    # custom objects: merge patch yes, strategic merge patch no (as upstream), schema validation
    kubectl(live, "patch", "promotion", "spring-sale", "--type=merge", "-p", '{"spec":{"discountPercent":25}}')
    assert kubectl(live, "get", "promotion", "spring-sale", "-o", "jsonpath={.spec.discountPercent}").stdout == "25"
    refused = kubectl(live, "patch", "promotion", "spring-sale", "-p", '{"spec":{"discountPercent":30}}', check=False)
    assert refused.returncode != 0 and "strategic" in refused.stderr.lower()
    invalid = kubectl(live, "patch", "promotion", "spring-sale", "--type=merge", "-p", '{"spec":{"discountPercent":95}}', check=False)
    assert invalid.returncode != 0 and "spec.discountPercent" in invalid.stderr and "less than or equal to 90" in invalid.stderr
    strict = kubectl(live, "apply", "-f", "-", stdin="apiVersion: shop.example.com/v1\nkind: Promotion\nmetadata: {name: typo}\nspec: {discountPercent: 5, bogus: 1}\n", check=False)
    assert strict.returncode != 0 and 'unknown field "spec.bogus"' in strict.stderr
    loose = kubectl(live, "apply", "--validate=false", "-f", "-", stdin="apiVersion: shop.example.com/v1\nkind: Promotion\nmetadata: {name: typo}\nspec: {discountPercent: 5, bogus: 1}\n")
    assert "created" in loose.stdout
    assert json.loads(kubectl(live, "get", "promotion", "typo", "-o", "json").stdout)["spec"] == {"discountPercent": 5, "audience": "everyone"}  # pruned, defaulted
    explained = kubectl(live, "explain", "promotions.spec").stdout
    assert "discountPercent" in explained and "Percent off." in explained


COUPONS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: coupons.deals.example.com}
spec:
  group: deals.example.com
  scope: Namespaced
  names: {plural: coupons, singular: coupon, kind: Coupon, listKind: CouponList}
  versions:
  - {name: v1beta1, served: false, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"""


def test_a_custom_resource_is_served_at_exactly_its_served_versions(live):
    """Through the HTTPS front, as upstream's ``crdHandler`` (``customresource_handler.go``):
    a version with ``served: false`` answers 404 and is not discovered; serving it (a CRD
    update) makes it answer, the object at that version (strategy None); unserving the
    storage version makes that one answer 404."""
    kubectl(live, "apply", "-f", "-", stdin=COUPONS)
    kubectl(live, "wait", "--for=condition=Established", "crd/coupons.deals.example.com", "--timeout=30s", timeout=40)
    kubectl(live, "apply", "-f", "-", stdin="apiVersion: deals.example.com/v1\nkind: Coupon\nmetadata: {name: c1, namespace: default}\nspec: {percent: 5}\n")
    path = "/apis/deals.example.com/{}/namespaces/default/coupons/c1"
    retired = kubectl(live, "get", "--raw", path.format("v1beta1"), check=False)
    assert retired.returncode != 0 and "NotFound" in retired.stderr, retired.stderr
    assert [entry["version"] for entry in json.loads(kubectl(live, "get", "--raw", "/apis/deals.example.com").stdout)["versions"]] == ["v1"]
    kubectl(live, "patch", "crd", "coupons.deals.example.com", "--type=json", "-p", '[{"op":"replace","path":"/spec/versions/0/served","value":true}]')
    for _ in range(50):
        answered = kubectl(live, "get", "--raw", path.format("v1beta1"), check=False)
        if answered.returncode == 0:
            break
        time.sleep(0.2)
    coupon = json.loads(answered.stdout)
    assert coupon["apiVersion"] == "deals.example.com/v1beta1" and coupon["spec"] == {"percent": 5}
    # kubectl's server-side apply at the non-storage version: stored at v1, its managedFields
    # entry at the version it was sent to (structuredMergeManager's groupVersion)
    kubectl(live, "apply", "--server-side", "-f", "-", stdin="apiVersion: deals.example.com/v1beta1\nkind: Coupon\nmetadata: {name: c1, namespace: default}\nspec: {percent: 5, code: SPRING}\n")
    stored = json.loads(kubectl(live, "get", "--raw", path.format("v1")).stdout)
    assert stored["spec"] == {"percent": 5, "code": "SPRING"}
    versions = {(entry["manager"], entry["operation"]): entry["apiVersion"] for entry in stored["metadata"]["managedFields"]}
    assert versions[("kubectl", "Apply")] == "deals.example.com/v1beta1"
    applied = [entry for entry in stored["metadata"]["managedFields"] if (entry["manager"], entry["operation"]) == ("kubectl", "Apply")][0]
    assert "f:code" in applied["fieldsV1"]["f:spec"]  # (kubectl 1.32 folds its client-side-apply entry into it: csaupgrade)
    kubectl(live, "patch", "crd", "coupons.deals.example.com", "--type=json", "-p", '[{"op":"replace","path":"/spec/versions/1/served","value":false}]')
    for _ in range(50):
        gone = kubectl(live, "get", "--raw", path.format("v1"), check=False)
        if gone.returncode != 0:
            break
        time.sleep(0.2)
    assert gone.returncode != 0 and "NotFound" in gone.stderr, gone.stderr
    assert json.loads(kubectl(live, "get", "--raw", path.format("v1beta1")).stdout)["metadata"]["name"] == "c1"


def test_the_python_client_reads_the_common_kinds_and_custom_objects(live):
    pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import client, config

    kubectl(live, "apply", "-f", "-", stdin=CRD)
    kubectl(live, "wait", "--for=condition=Established", "crd/promotions.shop.example.com", "--timeout=30s", timeout=40)
    kubectl(live, "apply", "-f", "-", stdin=APP + "---" + PROMOTIONS)
    kubectl(live, "rollout", "status", "statefulset/db", "--timeout=120s", timeout=150)
    time.sleep(2.0)  # the controllers write their statuses
    api_client = config.new_client_from_config(str(live.kubeconfig))
    core, apps, batch = client.CoreV1Api(api_client), client.AppsV1Api(api_client), client.BatchV1Api(api_client)
    extensions, custom = client.ApiextensionsV1Api(api_client), client.CustomObjectsApi(api_client)
    listed = {
        "statefulsets": apps.list_stateful_set_for_all_namespaces().items, "daemonsets": apps.list_daemon_set_for_all_namespaces().items,
        "controllerrevisions": apps.list_controller_revision_for_all_namespaces().items, "jobs": batch.list_job_for_all_namespaces().items,
        "cronjobs": batch.list_cron_job_for_all_namespaces().items, "configmaps": core.list_config_map_for_all_namespaces().items,
        "secrets": core.list_secret_for_all_namespaces().items, "pvcs": core.list_persistent_volume_claim_for_all_namespaces().items,
        "pvs": core.list_persistent_volume().items, "crds": extensions.list_custom_resource_definition().items,
        "storageclasses": client.StorageV1Api(api_client).list_storage_class().items,
    }
    for kind, items in listed.items():
        assert items, kind
    (db,) = [sts for sts in listed["statefulsets"] if sts.metadata.name == "db"]
    assert db.status.replicas >= 2 and db.spec.volume_claim_templates[0].metadata.name == "data"
    (crd,) = [crd for crd in listed["crds"] if crd.metadata.name == "promotions.shop.example.com"]
    assert crd.spec.versions[0].served and any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)
    promotions = custom.list_namespaced_custom_object("shop.example.com", "v1", "default", "promotions")
    assert promotions["kind"] == "PromotionList" and {item["metadata"]["name"] for item in promotions["items"]} >= {"spring-sale", "members-week"}
    assert all(item["kind"] == "Promotion" for item in promotions["items"])
    created = custom.create_namespaced_custom_object("shop.example.com", "v1", "default", "promotions",
                                                     {"apiVersion": "shop.example.com/v1", "kind": "Promotion", "metadata": {"name": "from-python"}, "spec": {"discountPercent": 10}})
    assert created["spec"] == {"discountPercent": 10, "audience": "everyone"}
    status = custom.patch_namespaced_custom_object_status("shop.example.com", "v1", "default", "promotions", "from-python", {"status": {"redemptions": 7}})
    assert status["status"] == {"redemptions": 7}
    read = custom.get_namespaced_custom_object("shop.example.com", "v1", "default", "promotions", "from-python")
    assert read["status"]["redemptions"] == 7 and read["metadata"]["generation"] == 1
    custom.delete_namespaced_custom_object("shop.example.com", "v1", "default", "promotions", "from-python")
    gone = kubectl(live, "get", "promotion", "from-python", check=False)
    assert gone.returncode == 1 and "not found" in gone.stderr
    print(json.dumps({kind: len(items) for kind, items in listed.items()}))


def test_serve_with_manifests_serves_the_users_application_and_its_custom_resources(tmp_path):
    """``chaoskube serve --manifests docs/examples/shop``: the application is created once
    the cluster is served (clients see it converge); kubectl sees its StatefulSet, DaemonSet
    and the Promotions of its CRD."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    shop = Path(__file__).resolve().parents[3] / "docs" / "examples" / "shop"
    cluster = {"etcdMembers": 3, "apiServers": 2, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 3, "zones": ["zone-a", "zone-b", "zone-c"]}]}
    with live_cluster(tmp_path / "serve-shop", manifests=shop, cluster=cluster, checkers=["steady-state"]) as (handle, outcome):
        for _ in range(30):  # created once the cluster is served: rollout status does not wait for it to exist
            if kubectl(handle, "get", "statefulset/cart-db", "-n", "shop", check=False).returncode == 0:
                break
            time.sleep(1.0)
        kubectl(handle, "rollout", "status", "statefulset/cart-db", "-n", "shop", "--timeout=150s", timeout=180)
        kubectl(handle, "rollout", "status", "daemonset/log-agent", "-n", "shop", "--timeout=60s", timeout=90)
        sts = kubectl(handle, "get", "statefulsets", "-n", "shop").stdout.splitlines()
        assert sts[1].split()[:2] == ["cart-db", "3/3"]
        ds = json.loads(kubectl(handle, "get", "daemonsets", "-n", "shop", "-o", "json").stdout)["items"][0]["status"]
        assert ds["numberReady"] == ds["desiredNumberScheduled"] == 3, ds
        for _ in range(60):
            promotions = kubectl(handle, "get", "promotions", "-n", "shop", "-o", "name", check=False).stdout.split()
            if len(promotions) == 2:
                break
            time.sleep(1.0)
        assert promotions == ["promotion.shop.example.com/members-week", "promotion.shop.example.com/spring-sale"]
        assert "promo" in kubectl(handle, "api-resources", "--api-group=shop.example.com").stdout
    assert outcome["result"].verdicts["steady-state"].valid is True, outcome["result"].verdicts["steady-state"].reason


def test_a_kopf_operator_of_a_custom_resource(tmp_path):
    """docs/operators/promotion_publisher.py, a kopf operator of the shop's Promotion CRD,
    run by ``serve --manifests docs/examples/shop --run``: kopf discovers the custom
    resource, watches it, writes the status subresource, and holds a deleted Promotion by
    its finalizer until its delete handler ran."""
    pytest.importorskip("kopf", reason="kopf is in the test extra (pip install -e '.[test]')")
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    import sys

    root = Path(__file__).resolve().parents[3]
    command = f"{sys.executable} -m kopf run --standalone -A {root / 'docs' / 'operators' / 'promotion_publisher.py'}"
    cluster = {"etcdMembers": 3, "apiServers": 2, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 3, "zones": ["zone-a", "zone-b", "zone-c"]}]}
    with live_cluster(tmp_path / "kopf-crd", manifests=root / "docs" / "examples" / "shop", cluster=cluster, checkers=["steady-state"], run=command) as (handle, outcome):
        offers: dict[str, str] = {}
        for _ in range(90):
            listed = kubectl(handle, "get", "promotions", "-n", "shop", "-o", "json", check=False)
            if listed.returncode == 0:
                offers = {item["metadata"]["name"]: (item.get("status") or {}).get("offer", "") for item in json.loads(listed.stdout)["items"]}
                if len(offers) == 2 and all(offers.values()):
                    break
            time.sleep(1.0)
        assert offers == {"members-week": "15% off for members", "spring-sale": "20% off for everyone"}
        kubectl(handle, "patch", "promotion", "spring-sale", "-n", "shop", "--type=merge", "-p", '{"spec":{"discountPercent":30}}')
        for _ in range(30):
            offer = kubectl(handle, "get", "promotion", "spring-sale", "-n", "shop", "-o", "jsonpath={.status.offer}").stdout
            if offer.startswith("30%"):
                break
            time.sleep(1.0)
        assert offer == "30% off for everyone"
        finalizers = kubectl(handle, "get", "promotion", "members-week", "-n", "shop", "-o", "jsonpath={.metadata.finalizers}").stdout
        assert "kopf.zalando.org/KopfFinalizerMarker" in finalizers
        kubectl(handle, "delete", "promotion", "members-week", "-n", "shop", "--timeout=60s", timeout=90)  # returns once kopf let it go
    journal = (tmp_path / "kopf-crd" / "journal.jsonl").read_text()
    assert "promotion members-week retired" in journal  # kopf's log, journaled as operator output
    assert '"path":"/apis/shop.example.com/v1/namespaces/shop/promotions/spring-sale/status"' in journal  # the status subresource

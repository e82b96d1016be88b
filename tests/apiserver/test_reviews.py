"""Access and token reviews through the API server (authorization.k8s.io/v1,
authentication.k8s.io/v1): answered from the replica's authenticator and authorizer, never
stored -- what ``kubectl auth can-i`` (``--list``) and ``kubectl auth whoami`` ask."""

from __future__ import annotations

from chaoskube.api import from_dict
from chaoskube.api.identity import ADMIN_TOKEN, authenticated_user, superuser, user_credentials
from chaoskube.api.objects import LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectReview, SelfSubjectRulesReview, SubjectAccessReview, TokenReview
from chaoskube.api.protocol import Credentials
from chaoskube.apiserver.server import ADMIN_USER, ApiServerConfig
from chaoskube.etcd.server import EtcdConfig
from tests.apiserver.apiserver_harness import run_api

ALICE_TOKEN = "alice-token"


def _pods(namespace: str, verb: str = "get") -> dict:
    return {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": "pods"}}


def test_reviews_answer_from_the_authenticator_and_the_authorizer():
    config = ApiServerConfig(etcd_endpoints=tuple(EtcdConfig().names), tokens=((ADMIN_TOKEN, superuser(ADMIN_USER)), (ALICE_TOKEN, authenticated_user("alice", ("devs",)))))
    alice = Credentials(token=ALICE_TOKEN)

    async def story(world, api, registry):
        for manifest in (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader", "namespace": "team"},
             "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "devs-read", "namespace": "team"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}, "subjects": [{"kind": "Group", "name": "devs"}]},
        ):
            obj = from_dict(manifest)
            assert (await api("create", obj.RESOURCE, namespace=obj.metadata.namespace, body=obj)).code == 201
        await api.process.sleep(2)  # the caches follow
        as_alice = api.as_(alice)
        answers = {
            "alice get pods in team": await as_alice("create", "selfsubjectaccessreviews", body=SelfSubjectAccessReview(spec=_pods("team"))),
            "alice get pods in default": await as_alice("create", "selfsubjectaccessreviews", body=SelfSubjectAccessReview(spec=_pods("default"))),
            "alice delete pods in team": await as_alice("create", "selfsubjectaccessreviews", body=SelfSubjectAccessReview(spec=_pods("team", "delete"))),
            "admin everything": await api("create", "selfsubjectaccessreviews", body=SelfSubjectAccessReview(spec={"resourceAttributes": {"verb": "*", "resource": "*", "group": "*"}})),
            "alice /healthz": await as_alice("create", "selfsubjectaccessreviews", body=SelfSubjectAccessReview(spec={"nonResourceAttributes": {"path": "/healthz", "verb": "get"}})),
            "neither": await as_alice("create", "selfsubjectaccessreviews", body=SelfSubjectAccessReview(spec={})),
            "SAR for devs": await api("create", "subjectaccessreviews", body=SubjectAccessReview(spec={"user": "bob", "groups": ["devs"], **_pods("team", "list")})),
            "SAR by alice": await as_alice("create", "subjectaccessreviews", body=SubjectAccessReview(spec={"user": "bob", **_pods("team")})),
            "LSAR": await api("create", "localsubjectaccessreviews", namespace="team", body=LocalSubjectAccessReview(spec={"user": "carol", "groups": ["devs"], **_pods("team")})),
            "LSAR elsewhere": await api("create", "localsubjectaccessreviews", namespace="team", body=LocalSubjectAccessReview(spec={"user": "carol", **_pods("default")})),
            "token": await api("create", "tokenreviews", body=TokenReview(spec={"token": ALICE_TOKEN})),
            "bad token": await api("create", "tokenreviews", body=TokenReview(spec={"token": "nope"})),
            "rules": await as_alice("create", "selfsubjectrulesreviews", body=SelfSubjectRulesReview(spec={"namespace": "team"})),
            "whoami": await as_alice("create", "selfsubjectreviews", body=SelfSubjectReview()),
            "a node's rules": await api.as_(user_credentials("system:node:node-1", ("system:nodes",)))("create", "selfsubjectrulesreviews", body=SelfSubjectRulesReview(spec={"namespace": "team"})),
            "get": await api("get", "selfsubjectaccessreviews", name="x"),
        }
        listed = await api("list", "events", namespace="default")
        return answers, listed

    _, (answers, listed) = run_api(story, config=config)
    status = {name: (response.object.status if response.ok else response.code) for name, response in answers.items()}
    assert status["alice get pods in team"] == {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "devs-read/team" of Role "reader" to Group "devs"'}
    assert status["alice get pods in default"] == {"allowed": False}
    assert status["alice delete pods in team"] == {"allowed": False}
    assert status["admin everything"] == {"allowed": True}
    assert status["alice /healthz"]["allowed"] is True
    assert status["neither"] == 422
    assert "exactly one of nonResourceAttributes or resourceAttributes must be specified" in answers["neither"].status.message
    assert status["SAR for devs"]["allowed"] is True
    assert status["SAR by alice"] == 403  # creating a SubjectAccessReview needs its own permission
    assert status["LSAR"]["allowed"] is True and answers["LSAR"].object.metadata.namespace == "team"
    assert status["LSAR elsewhere"] == 400 and answers["LSAR elsewhere"].status.message == "spec.resourceAttributes.namespace must match namespace: team"
    assert status["token"] == {"authenticated": True, "audiences": [], "user": {"username": "alice", "groups": ["devs", "system:authenticated"]}}
    assert status["bad token"]["authenticated"] is False
    rules = status["rules"]
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in rules["resourceRules"]
    assert {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in rules["resourceRules"]
    assert rules["incomplete"] is False and any("/healthz" in rule["nonResourceURLs"] for rule in rules["nonResourceRules"])
    assert status["whoami"] == {"userInfo": {"username": "alice", "groups": ["devs", "system:authenticated"]}}
    assert status["a node's rules"]["incomplete"] is True and status["a node's rules"]["evaluationError"] == "node authorizer does not support user rule resolution"
    assert status["get"] == 405
    assert all(response.object.metadata.resource_version == "" for response in answers.values() if response.ok)  # never stored


def test_impersonation_runs_the_request_as_the_impersonated_user_when_allowed():
    config = ApiServerConfig(etcd_endpoints=tuple(EtcdConfig().names), tokens=((ADMIN_TOKEN, superuser(ADMIN_USER)), (ALICE_TOKEN, authenticated_user("alice", ("devs",)))))

    async def story(world, api, registry):
        def as_(token: str, user: str, groups: tuple[str, ...] = ()):
            return api.as_(Credentials(token=token, impersonate_user=user, impersonate_groups=groups))

        return {
            "admin as bob": await as_(ADMIN_TOKEN, "bob", ("devs",))("create", "selfsubjectreviews", body=SelfSubjectReview()),
            "admin as bob lists pods": await as_(ADMIN_TOKEN, "bob")("list", "pods", namespace="default"),
            "admin as a service account": await as_(ADMIN_TOKEN, "system:serviceaccount:default:default")("create", "selfsubjectreviews", body=SelfSubjectReview()),
            "alice as carol": await as_(ALICE_TOKEN, "carol")("list", "pods", namespace="default"),
        }

    _, answers = run_api(story, config=config)
    assert answers["admin as bob"].object.status == {"userInfo": {"username": "bob", "groups": ["devs", "system:authenticated"]}}
    assert answers["admin as bob lists pods"].code == 403 and 'User "bob" cannot list resource "pods"' in answers["admin as bob lists pods"].status.message
    account = answers["admin as a service account"].object.status["userInfo"]
    assert account["username"] == "system:serviceaccount:default:default" and "system:serviceaccounts:default" in account["groups"]
    refused = answers["alice as carol"]
    assert refused.code == 403 and refused.status.message == 'users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope'

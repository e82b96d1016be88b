"""Admission webhooks: pure matching (tables after upstream's rules_test.go and the
namespace/object matchers), configuration validation and AdmissionReview checks; then
scenarios in a World where a plain process dispatches to webhook processes that allow,
patch, deny, time out, die, are cut off, and are reinvoked."""

import base64
import json

import pytest

from chaoskube.api.identity import UserInfo
from chaoskube.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    MatchCondition,
    MutatingWebhook,
    MutatingWebhookConfiguration,
    Namespace,
    Node,
    ObjectMeta,
    Pod,
    RuleWithOperations,
    ServiceReference,
    ValidatingWebhook,
    ValidatingWebhookConfiguration,
    WebhookClientConfig,
)
from chaoskube.apiserver.admission import AdmissionRequest
from chaoskube.apiserver.webhooks import (
    WEBHOOK_PORT,
    InvalidWebhookResponse,
    NamespaceNotFound,
    WebhookConfigError,
    WebhookDispatcher,
    WebhookServerError,
    admission_review,
    allow,
    check_configuration,
    denial_status,
    deny,
    deny_when,
    failure_policy,
    label_injector,
    matches,
    patch_response,
    reinvocation_policy,
    resolve_endpoint,
    rule_matches,
    slow,
    timeout_seconds,
    validate_configuration,
    verify_admission_response,
    webhook_server,
)
from chaoskube.faults import grudge
from chaoskube.sim import World

API = "kube-apiserver"
SERVER = "wh.default.svc"


# -- builders ------------------------------------------------------------------------------------
def rule(operations=("CREATE",), groups=("",), versions=("v1",), resources=("pods",), scope=None):
    return RuleWithOperations(
        operations=list(operations), api_groups=list(groups), api_versions=list(versions), resources=list(resources), scope=scope
    )


def webhook(name="check.example.com", *, service="wh", path="/hook", mutating=False, rules=None, **fields):
    cls = MutatingWebhook if mutating else ValidatingWebhook
    config = WebhookClientConfig(service=ServiceReference(namespace="default", name=service, path=path))
    fields = {"admission_review_versions": ["v1"], "side_effects": "None", **fields}
    return cls(name=name, client_config=config, rules=rules or [rule()], **fields)


def validating(name, *hooks):
    return ValidatingWebhookConfiguration(metadata=ObjectMeta(name=name), webhooks=list(hooks))


def mutating(name, *hooks):
    return MutatingWebhookConfiguration(metadata=ObjectMeta(name=name), webhooks=list(hooks))


def pod(name="web", namespace="default", labels=None):
    return Pod(metadata=ObjectMeta(name=name, namespace=namespace, labels=dict(labels or {})))


def create(obj=None, namespace="default", **fields):
    obj = obj if obj is not None else pod(namespace=namespace)
    user = UserInfo("alice", ("dev", "system:authenticated"), "u-1")
    return AdmissionRequest(operation="CREATE", kind=obj.KIND, namespace=namespace, object=obj, user=user, **fields)


# -- rules (upstream predicates/rules/rules_test.go) -----------------------------------------------
def attrs(group="g", version="v", resource="r", subresource="", operation="CREATE", namespace="ns"):
    return {"group": group, "version": version, "resource": resource, "subresource": subresource, "operation": operation, "namespace": namespace}


ANY = {"operations": ("*",), "groups": ("*",), "versions": ("*",), "resources": ("*/*",)}


def any_but(**changes):
    return rule(**{**ANY, **changes})


@pytest.mark.parametrize(
    ("name", "the_rule", "match", "no_match"),
    [
        ("group wildcard", any_but(groups=("*",)), [attrs(group="g")], []),
        ("group exact", any_but(groups=("g1", "g2")), [attrs(group="g1"), attrs(group="g2", version="v2")], [attrs(group="g3"), attrs(group="g4")]),
        ("version exact", any_but(versions=("v1", "v2")), [attrs(version="v1"), attrs(version="v2")], [attrs(version="v3")]),
        ("operation wildcard", any_but(operations=("*",)), [attrs(operation=op) for op in ("CREATE", "UPDATE", "DELETE", "CONNECT")], []),
        ("operation create", any_but(operations=("CREATE",)), [attrs()], [attrs(operation=op) for op in ("UPDATE", "DELETE", "CONNECT")]),
        ("operation multiple", any_but(operations=("UPDATE", "DELETE")), [attrs(operation="UPDATE"), attrs(operation="DELETE")], [attrs(), attrs(operation="CONNECT")]),
        ("no subresources", any_but(resources=("*",)), [attrs(), attrs(resource="r2")], [attrs(subresource="exec"), attrs(resource="r2", subresource="proxy")]),
        ("r and subresources", any_but(resources=("r/*",)), [attrs(), attrs(subresource="exec")], [attrs(resource="r2"), attrs(resource="r2", subresource="proxy")]),
        ("r/* or r2", any_but(resources=("r/*", "r2")), [attrs(), attrs(subresource="exec"), attrs(resource="r2")], [attrs(resource="r2", subresource="proxy")]),
        ("proxy or exec", any_but(resources=("*/proxy", "*/exec")), [attrs(subresource="exec"), attrs(resource="r2", subresource="proxy")], [attrs(), attrs(resource="r4", subresource="scale")]),
        ("pods/status only", any_but(resources=("pods/status",)), [attrs(resource="pods", subresource="status")], [attrs(resource="pods"), attrs(resource="pods", subresource="eviction")]),
        ("*/status", any_but(resources=("*/status",)), [attrs(resource="pods", subresource="status"), attrs(resource="nodes", subresource="status")], [attrs(resource="pods")]),
    ],
)
def test_rule_matching_as_upstream(name, the_rule, match, no_match):
    for attributes in match:
        assert rule_matches(the_rule, **attributes), (name, attributes)
    for attributes in no_match:
        assert not rule_matches(the_rule, **attributes), (name, attributes)


@pytest.mark.parametrize(
    ("scope", "match", "no_match"),
    [
        ("Cluster",
         [attrs(namespace=""), attrs(namespace="", subresource="exec"), attrs("", "v1", "namespaces", namespace=""), attrs("", "v1", "namespaces", "finalize", namespace=""), attrs("", "v1", "namespaces")],
         [attrs(), attrs(subresource="exec")]),
        ("Namespaced",
         [attrs(), attrs(subresource="exec")],
         [attrs("", "v1", "namespaces", namespace=""), attrs("", "v1", "namespaces"), attrs("", "v1", "namespaces", "finalize"), attrs(namespace="")]),
        ("*", [attrs(), attrs(namespace=""), attrs("", "v1", "namespaces")], []),
        (None, [attrs(), attrs(namespace="")], []),
    ],
)
def test_rule_scope_as_upstream(scope, match, no_match):
    the_rule = any_but(scope=scope)
    for attributes in match:
        assert rule_matches(the_rule, **attributes), attributes
    for attributes in no_match:
        assert not rule_matches(the_rule, **attributes), attributes


# -- selectors and whole-webhook matching ------------------------------------------------------------
PROD = LabelSelector(match_labels={"env": "prod"})


@pytest.mark.parametrize(
    ("name", "selector", "labels", "expected"),
    [
        ("no selector: everything", None, {}, True),
        ("empty selector: everything", LabelSelector(), {"a": "b"}, True),
        ("namespace labels match", PROD, {"env": "prod"}, True),
        ("namespace labels do not match", PROD, {"env": "dev"}, False),
        ("expression NotIn", LabelSelector(match_expressions=[LabelSelectorRequirement(key="env", operator="NotIn", values=["prod"])]), {}, True),
    ],
)
def test_namespace_selector(name, selector, labels, expected):
    assert matches(webhook(namespace_selector=selector), create(), namespace_labels=labels) is expected, name


def test_missing_namespace_is_404_only_when_the_rules_match():
    hook = webhook(namespace_selector=PROD)
    with pytest.raises(NamespaceNotFound) as raised:
        matches(hook, create(namespace="gone"), namespace_labels=None)
    assert (raised.value.status.code, raised.value.status.message) == (404, 'namespaces "gone" not found')
    other = webhook(namespace_selector=PROD, rules=[rule(resources=("deployments",), groups=("apps",))])
    assert matches(other, create(namespace="gone"), namespace_labels=None) is False
    assert matches(webhook(), create(namespace="gone"), namespace_labels=None) is True  # no selector: no lookup


def test_cluster_scoped_objects_always_pass_the_namespace_selector_but_namespaces_use_their_own_labels():
    node_request = AdmissionRequest(operation="CREATE", kind="Node", object=Node(metadata=ObjectMeta(name="n1")))
    any_rule = [rule(resources=("*",))]
    assert matches(webhook(namespace_selector=PROD, rules=any_rule), node_request, namespace_labels=None) is True
    namespace = Namespace(metadata=ObjectMeta(name="shop", labels={"env": "prod"}))
    ns_request = AdmissionRequest(operation="CREATE", kind="Namespace", object=namespace)
    assert matches(webhook(namespace_selector=PROD, rules=any_rule), ns_request, namespace_labels=None) is True
    dev = AdmissionRequest(operation="CREATE", kind="Namespace", object=Namespace(metadata=ObjectMeta(name="x", labels={"env": "dev"})))
    assert matches(webhook(namespace_selector=PROD, rules=any_rule), dev, namespace_labels={"env": "prod"}) is False


def test_object_selector_reads_the_new_or_the_old_object():
    hook = webhook(object_selector=LabelSelector(match_labels={"app": "web"}), rules=[rule(operations=("*",))])
    assert matches(hook, create(pod(labels={"app": "web"})), namespace_labels={}) is True
    assert matches(hook, create(pod(labels={"app": "db"})), namespace_labels={}) is False
    deleting = AdmissionRequest(operation="DELETE", kind="Pod", namespace="default", name="web", old_object=pod(labels={"app": "web"}))
    assert matches(hook, deleting, namespace_labels={}) is True
    unlabelled = AdmissionRequest(operation="DELETE", kind="Pod", namespace="default", name="web", old_object=pod())
    assert matches(hook, unlabelled, namespace_labels={}) is False


def test_subresource_requests_match_subresource_rules_only():
    status = AdmissionRequest(operation="UPDATE", kind="Pod", namespace="default", name="web", object=pod(), old_object=pod(), subresource="status")
    assert matches(webhook(rules=[rule(operations=("UPDATE",))]), status, namespace_labels={}) is False
    assert matches(webhook(rules=[rule(operations=("UPDATE",), resources=("pods/status",))]), status, namespace_labels={}) is True
    assert matches(webhook(rules=[rule(operations=("UPDATE",), resources=("pods/*",))]), status, namespace_labels={}) is True


def test_webhook_configurations_are_never_sent_to_webhooks():
    config = validating("v", webhook())
    request = AdmissionRequest(operation="CREATE", kind="ValidatingWebhookConfiguration", object=config)
    everything = webhook(rules=[rule(operations=("*",), groups=("*",), versions=("*",), resources=("*",))])
    assert matches(everything, request, namespace_labels=None) is False


def test_match_conditions_are_refused_not_ignored():
    hook = webhook(match_conditions=[MatchCondition(name="not-system", expression="true")])
    with pytest.raises(WebhookConfigError, match="matchConditions"):
        matches(hook, create(), namespace_labels={})
    with pytest.raises(WebhookConfigError, match="not supported"):
        check_configuration(validating("c", hook))


# -- defaults and validation ---------------------------------------------------------------------------
def test_defaults_are_v1s():
    hook = webhook(mutating=True)
    assert (failure_policy(hook), timeout_seconds(hook), reinvocation_policy(hook)) == ("Fail", 10, "Never")
    assert resolve_endpoint(hook).url == "https://wh.default.svc:443/hook"
    assert validate_configuration(mutating("m", hook)) == []


@pytest.mark.parametrize(
    ("fields", "cause"),
    [
        ({"timeout_seconds": 31}, "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"),
        ({"timeout_seconds": 0}, "webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds"),
        ({"side_effects": None}, "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"),
        ({"side_effects": "Some"}, 'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"'),
        ({"failure_policy": "Never"}, 'webhooks[0].failurePolicy: Unsupported value: "Never": supported values: "Fail", "Ignore"'),
        ({"admission_review_versions": []}, "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"),
        ({"name": "check"}, 'webhooks[0].name: Invalid value: "check": should be a domain with at least three segments separated by dots'),
        ({"rules": [rule(operations=("CREATE", "*"))]}, "webhooks[0].rules[0].operations: Invalid value: []string{\"CREATE\", \"*\"}: if '*' is present, must not specify other operations"),
        ({"rules": [rule(scope="Everywhere")]}, 'webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced"'),
    ],
)
def test_invalid_configurations_have_upstreams_causes(fields, cause):
    base = {"name": "check.example.com"}
    hook = webhook(**{**base, **fields})
    assert cause in validate_configuration(validating("c", hook))
    with pytest.raises(WebhookConfigError) as raised:
        check_configuration(validating("c", hook))
    assert str(raised.value).startswith('ValidatingWebhookConfiguration.admissionregistration.k8s.io "c" is invalid: ')


def test_duplicate_names_and_client_config():
    config = validating("c", webhook("a.example.com"), webhook("a.example.com"))
    assert 'webhooks[1].name: Duplicate value: "a.example.com"' in validate_configuration(config)
    neither = ValidatingWebhook(name="a.b.c", client_config=WebhookClientConfig(), admission_review_versions=["v1"], side_effects="None")
    assert "webhooks[0].clientConfig: Required value: exactly one of url or service is required" in validate_configuration(validating("c", neither))
    plain = ValidatingWebhook(name="a.b.c", client_config=WebhookClientConfig(url="http://x.example.com/v"), admission_review_versions=["v1"], side_effects="None")
    assert "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]" in validate_configuration(validating("c", plain))
    query = ValidatingWebhook(name="a.b.c", client_config=WebhookClientConfig(url="https://x.example.com/v?a=b"), admission_review_versions=["v1"], side_effects="None")
    assert validate_configuration(validating("c", query)) == ['webhooks[0].clientConfig.url: Invalid value: "a=b": query parameters are not permitted in the URL']


@pytest.mark.parametrize(
    ("config", "process", "url"),
    [
        (WebhookClientConfig(service=ServiceReference(namespace="sys", name="guard")), "guard.sys.svc", "https://guard.sys.svc:443/"),
        (WebhookClientConfig(service=ServiceReference(namespace="sys", name="guard", port=8443, path="/v1/check/")), "guard.sys.svc", "https://guard.sys.svc:8443/v1/check"),
        (WebhookClientConfig(url="https://policy.example.com/validate"), "policy.example.com", "https://policy.example.com/validate"),
        (WebhookClientConfig(url="https://policy.example.com:9443/validate"), "policy.example.com", "https://policy.example.com:9443/validate"),
    ],
)
def test_endpoint_resolution(config, process, url):
    hook = ValidatingWebhook(name="a.b.c", client_config=config)
    endpoint = resolve_endpoint(hook)
    assert (endpoint.process, endpoint.url) == (process, url)


# -- AdmissionReview -----------------------------------------------------------------------------------
def test_admission_review_has_upstreams_fields():
    review = admission_review(create(pod(labels={"app": "web"}), dry_run=True), "uid-1")
    assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    request = review["request"]
    assert set(request) == {
        "uid", "kind", "resource", "subResource", "requestKind", "requestResource", "requestSubResource", "name",
        "namespace", "operation", "userInfo", "object", "oldObject", "dryRun", "options",
    }
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["userInfo"] == {"username": "alice", "uid": "u-1", "groups": ["dev", "system:authenticated"]}
    assert request["object"]["metadata"]["labels"] == {"app": "web"} and request["oldObject"] is None
    assert (request["name"], request["namespace"], request["operation"], request["dryRun"]) == ("web", "default", "CREATE", True)
    assert request["options"] == {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "dryRun": ["All"]}
    eviction = AdmissionRequest(operation="CREATE", kind="Pod", namespace="default", name="web", subresource="eviction", old_object=pod())
    evicted = admission_review(eviction, "u")["request"]
    assert evicted["kind"] == {"group": "policy", "version": "v1", "kind": "Eviction"} and evicted["subResource"] == "eviction"


def review_of(response, api_version="admission.k8s.io/v1"):
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


@pytest.mark.parametrize(
    ("review", "mutating", "message"),
    [
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, True, "webhook response was absent"),
        (review_of({"uid": "other", "allowed": True}), False, 'expected response.uid="u", got "other"'),
        (review_of({"uid": "u", "allowed": True}, "admission.k8s.io/v1beta1"), False, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"),
        (review_of({"uid": "u", "allowed": True, "patch": "W10="}), True, "webhook returned response.patch but not response.patchType"),
        (review_of({"uid": "u", "allowed": True, "patchType": "JSONPatch"}), True, "webhook returned response.patchType but not response.patch"),
        (review_of({"uid": "u", "allowed": True, "patch": "W10=", "patchType": "JSONPatch"}), False, "validating webhook may not return response.patch"),
        (review_of({"uid": "u", "allowed": True, "patchType": "JSONPatch"}), False, "validating webhook may not return response.patchType"),
    ],
)
def test_invalid_responses_are_refused_with_upstreams_messages(review, mutating, message):
    with pytest.raises(InvalidWebhookResponse) as raised:
        verify_admission_response(review, "u", mutating=mutating)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("status", "code", "reason", "message"),
    [
        ({"code": 403, "reason": "Forbidden", "message": "no root"}, 403, "Forbidden", 'admission webhook "w.example.com" denied the request: no root'),
        ({"reason": "NotAllowed"}, 400, "NotAllowed", 'admission webhook "w.example.com" denied the request: NotAllowed'),
        (None, 400, "", 'admission webhook "w.example.com" denied the request without explanation'),
        ({"code": 200, "message": "ok?"}, 400, "", 'admission webhook "w.example.com" denied the request: ok?'),
        ({"code": 422, "message": "bad"}, 422, "", 'admission webhook "w.example.com" denied the request: bad'),
    ],
)
def test_denial_status_as_to_status_err(status, code, reason, message):
    assert denial_status("w.example.com", status) == denial_status("w.example.com", status)
    result = denial_status("w.example.com", status)
    assert (result.code, result.reason, result.message) == (code, reason, message)


def test_label_injector_patches():
    def ops(handler, obj):
        response = handler({"uid": "u", "object": obj})
        return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []

    inject = label_injector("example.com/team", "a")
    assert ops(inject, {"metadata": {"name": "x"}}) == [{"op": "add", "path": "/metadata/labels", "value": {"example.com/team": "a"}}]
    assert ops(inject, {"metadata": {"labels": {"b": "c"}}}) == [{"op": "add", "path": "/metadata/labels/example.com~1team", "value": "a"}]
    assert ops(inject, {"metadata": {"labels": {"example.com/team": "a"}}}) == []  # idempotent
    assert ops(label_injector("k~x", "v"), {"metadata": {"labels": {}}})[0]["path"] == "/metadata/labels/k~0x"
    assert ops(inject, None) == []


# -- scenarios on the simulated network ------------------------------------------------------------------
def scenario(body, servers=(), *, seed=1, setup=None, limit_s=120.0):
    """Spawn the webhook ``servers`` [(process, handler)], apply ``setup(world)``, then run
    ``body(dispatcher)`` in a plain process; returns (world, its result, elapsed s)."""
    out = {}

    async def api(process):
        dispatcher = WebhookDispatcher(process)
        started = process.now()
        out["result"] = await body(dispatcher)
        out["elapsed"] = process.now() - started

    async def main(world):
        for name, handler in servers:
            world.spawn(name, webhook_server(handler), role="webhook")
        await world.sleep(0.01)
        if setup is not None:
            setup(world)
        world.spawn(API, api, role="apiserver")
        while "result" not in out and world.now < limit_s:
            await world.sleep(0.25)

    world = World(seed)
    world.run(main)
    assert "result" in out, "the dispatch never finished"
    return world, out["result"], out["elapsed"]


def calls(world):
    return world.journal.of_type("webhook-call")


def validate_with(*configs, request=None, labels=()):
    async def body(dispatcher):
        namespace_labels = {} if labels == () else labels  # None: the namespace does not exist
        return await dispatcher.validate(request or create(), list(configs), namespace_labels=namespace_labels)

    return body


def mutate_with(*configs, request=None):
    async def body(dispatcher):
        return await dispatcher.mutate(request or create(), list(configs), namespace_labels={})

    return body


def test_allowed():
    world, result, elapsed = scenario(validate_with(validating("v", webhook())), [(SERVER, allow(warnings=["deprecated field"]))])
    assert result.allowed and result.status is None and result.object == create().object
    assert result.warnings == ("deprecated field",)
    [call] = calls(world)
    assert (call["outcome"], call["webhook"], call["server"], call["operation"], call["kind"]) == ("allowed", "check.example.com", API, "CREATE", "Pod")
    assert elapsed < 0.01 and call["latency_s"] < 0.01


def test_patched_label_added_and_object_returned():
    hook = webhook("label.example.com", mutating=True)
    world, result, _ = scenario(mutate_with(mutating("m", hook)), [(SERVER, label_injector("example.com/team", "payments"))])
    assert result.allowed
    assert isinstance(result.object, Pod) and result.object.metadata.labels == {"example.com/team": "payments"}
    assert result.patches == ({"op": "add", "path": "/metadata/labels", "value": {"example.com/team": "payments"}},)
    assert calls(world)[0]["outcome"] == "patched"
    keys = dict(result.annotations)
    assert json.loads(keys["mutation.webhook.admission.k8s.io/round_0_index_0"]) == {"configuration": "m", "webhook": "label.example.com", "mutated": True}
    assert json.loads(keys["patch.webhook.admission.k8s.io/round_0_index_0"])["patchType"] == "JSONPatch"


def test_denied_with_message_and_code():
    world, result, _ = scenario(validate_with(validating("v", webhook())), [(SERVER, deny("privileged pods are not allowed"))])
    assert not result.allowed and result.object is None and result.webhook == "check.example.com"
    assert (result.status.code, result.status.reason) == (403, "Forbidden")
    assert result.status.message == 'admission webhook "check.example.com" denied the request: privileged pods are not allowed'
    assert calls(world)[0]["outcome"] == "denied"


def test_deny_when_looks_at_the_request():
    is_prod = deny_when(lambda request: request["object"]["metadata"]["labels"].get("env") == "prod", "frozen", code=422)
    _, refused, _ = scenario(validate_with(validating("v", webhook()), request=create(pod(labels={"env": "prod"}))), [(SERVER, is_prod)])
    _, passed, _ = scenario(validate_with(validating("v", webhook()), request=create(pod(labels={"env": "dev"}))), [(SERVER, is_prod)])
    assert (refused.allowed, refused.status.code, passed.allowed) == (False, 422, True)


DEADLINE = 'Post "https://wh.default.svc:443/hook?timeout={t}s": context deadline exceeded'


def test_timeout_under_fail_is_a_500_after_timeout_seconds():
    world, result, elapsed = scenario(validate_with(validating("v", webhook())), [(SERVER, slow(allow(), 25.0))])
    assert not result.allowed and (result.status.code, result.status.reason) == (500, "InternalError")
    assert result.status.message == 'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: ' + DEADLINE.format(t=10)
    assert elapsed == pytest.approx(10.0)  # the default timeoutSeconds, in virtual time
    assert calls(world)[0]["outcome"] == "error" and calls(world)[0]["latency_s"] == pytest.approx(10.0)


def test_timeout_under_ignore_admits_unmodified():
    hook = webhook("label.example.com", mutating=True, failure_policy="Ignore", timeout_seconds=2)
    world, result, elapsed = scenario(mutate_with(mutating("m", hook)), [(SERVER, slow(label_injector("team", "x"), 5.0))])
    assert result.allowed and result.object == create().object and result.patches == ()
    assert dict(result.annotations)["failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"] == "label.example.com"
    assert elapsed == pytest.approx(2.0)
    [call] = calls(world)
    assert call["outcome"] == "ignored-error" and "context deadline exceeded" in call["reason"] and "?timeout=2s" in call["reason"]


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_killed_webhook_refuses_the_connection(policy):
    def kill(world):
        world.process(SERVER).kill()

    world, result, elapsed = scenario(validate_with(validating("v", webhook(failure_policy=policy))), [(SERVER, allow())], setup=kill)
    assert elapsed < 0.01  # refused at once, not timed out
    if policy == "Fail":
        assert result.status.code == 500
        assert result.status.message == (
            'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: '
            'Post "https://wh.default.svc:443/hook?timeout=10s": dial tcp wh.default.svc:443: connect: connection refused'
        )
    else:
        assert result.allowed and calls(world)[0]["outcome"] == "ignored-error"
        assert dict(result.annotations) == {"failed-open.validating.webhook.admission.k8s.io/round_0_index_0": "check.example.com"}


def test_partitioned_webhook_times_out():
    def cut(world):
        world.network.partition(grudge.isolate(SERVER, [SERVER, API]))

    hook = webhook(timeout_seconds=3)
    world, result, elapsed = scenario(validate_with(validating("v", hook)), [(SERVER, allow())], setup=cut)
    assert result.status.code == 500 and result.status.message.endswith(DEADLINE.format(t=3))
    assert elapsed == pytest.approx(3.0)


def test_timeout_seconds_31_is_refused_before_any_call():
    async def body(dispatcher):
        try:
            await dispatcher.validate(create(), [validating("v", webhook(timeout_seconds=31))], namespace_labels={})
        except WebhookConfigError as error:
            return str(error)
        return "no error"

    world, message, _ = scenario(body, [(SERVER, allow())])
    assert "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds" in message
    assert calls(world) == []


def test_invalid_answers_are_call_errors():
    def wrong_uid(request):
        return {"uid": "not-" + request["uid"], "allowed": True}

    _, result, _ = scenario(validate_with(validating("v", webhook())), [(SERVER, wrong_uid)])
    assert result.status.code == 500 and "received invalid webhook response: expected response.uid=" in result.status.message

    def patching(request):
        return patch_response([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])

    _, result, _ = scenario(validate_with(validating("v", webhook())), [(SERVER, patching)])
    assert result.status.message.endswith("received invalid webhook response: validating webhook may not return response.patch")

    def broken(request):
        raise WebhookServerError("boom")

    _, result, _ = scenario(validate_with(validating("v", webhook())), [(SERVER, broken)])
    assert result.status.message.endswith('failed to call webhook: an error on the server ("boom") has prevented the request from succeeding')


def test_a_patch_that_does_not_apply_is_an_internal_error_even_under_ignore():
    def bad_patch(request):
        return patch_response([{"op": "remove", "path": "/spec/nothing"}])

    hook = webhook("bad.example.com", mutating=True, failure_policy="Ignore")
    _, result, _ = scenario(mutate_with(mutating("m", hook)), [(SERVER, bad_patch)])
    assert not result.allowed and result.status.code == 500 and result.status.message.startswith("Internal error occurred: ")


def test_missing_namespace_is_a_404_and_calls_nothing():
    hook = webhook(namespace_selector=PROD)
    world, result, _ = scenario(validate_with(validating("v", hook), request=create(namespace="gone"), labels=None), [(SERVER, allow())])
    assert (result.status.code, result.status.message) == (404, 'namespaces "gone" not found')
    assert calls(world) == []


# -- ordering and reinvocation ---------------------------------------------------------------------------
def saw_b(request):
    """Adds ``a-saw-b`` once label ``b`` is present: its output depends on a later webhook."""
    labels = (request["object"]["metadata"].get("labels") or {})
    if "b" in labels and "a-saw-b" not in labels:
        return patch_response([{"op": "add", "path": "/metadata/labels/a-saw-b", "value": "yes"}])
    return {"allowed": True}


def reinvocation_run(policy, b_handler):
    a = webhook("a.example.com", service="a", mutating=True, reinvocation_policy=policy)
    b = webhook("b.example.com", service="b", mutating=True)
    # Passed out of order: configurations are sorted by name, so a runs before b.
    return scenario(mutate_with(mutating("2-b", b), mutating("1-a", a)), [("a.default.svc", saw_b), ("b.default.svc", b_handler)])


def test_if_needed_is_reinvoked_once_after_a_later_change():
    world, result, _ = reinvocation_run("IfNeeded", label_injector("b", "yes"))
    assert [(c["webhook"], c["round"], c["outcome"]) for c in calls(world)] == [
        ("a.example.com", 0, "allowed"), ("b.example.com", 0, "patched"), ("a.example.com", 1, "patched"),
    ]
    assert result.object.metadata.labels == {"b": "yes", "a-saw-b": "yes"}


def test_never_is_not_reinvoked():
    world, result, _ = reinvocation_run("Never", label_injector("b", "yes"))
    assert [c["webhook"] for c in calls(world)] == ["a.example.com", "b.example.com"]
    assert result.object.metadata.labels == {"b": "yes"}


def test_if_needed_is_not_reinvoked_without_a_later_change():
    world, result, _ = reinvocation_run("IfNeeded", allow())
    assert [c["webhook"] for c in calls(world)] == ["a.example.com", "b.example.com"]
    assert result.object == create().object and result.patches == ()


def test_validating_webhooks_run_in_parallel_and_the_first_refusal_in_order_wins():
    hooks = [
        validating("1-slow-deny", webhook("one.example.com", service="one")),
        validating("2-fast-deny", webhook("two.example.com", service="two")),
        validating("3-allow", webhook("three.example.com", service="three")),
    ]
    servers = [
        ("one.default.svc", slow(deny("one says no"), 3.0)),
        ("two.default.svc", slow(deny("two says no"), 1.0)),
        ("three.default.svc", slow(allow(), 2.0)),
    ]
    world, result, elapsed = scenario(validate_with(*hooks), servers)
    assert 3.0 <= elapsed < 3.1  # the slowest call, not the sum (6 s)
    assert result.webhook == "one.example.com" and result.status.message.endswith("one says no")
    assert [c["webhook"] for c in calls(world)] == ["two.example.com", "three.example.com", "one.example.com"]  # by arrival


def test_same_seed_same_journal_and_fresh_uids():
    def run():
        hook = webhook("label.example.com", mutating=True)
        return scenario(mutate_with(mutating("m", hook), mutating("n", webhook("other.example.com", mutating=True))), [(SERVER, label_injector("k", "v"))], seed=7)[0]

    first, second = run(), run()
    assert first.fingerprint == second.fingerprint
    uids = [c["uid"] for c in calls(first)]
    assert len(uids) == 2 and len(set(uids)) == 2


def test_webhook_port_constant():
    assert WEBHOOK_PORT == "webhook"


def test_webhooks_match_custom_resources_by_their_group_and_plural():
    """A webhook configured in the cluster once crashed every create of a custom resource
    (its kind is not a built-in one; found by swarm-apps with a CRD in its workload): the
    rules match a custom object on its CRD's group, version and plural, and its
    AdmissionReview names them."""
    from chaoskube.api.objects import custom_type

    backup = custom_type("stable.example.com/v1", "Backup", "backups.stable.example.com", True)(
        metadata=ObjectMeta(name="nightly", namespace="default"), content={"spec": {"schedule": "0 2 * * *"}})
    request = AdmissionRequest(operation="CREATE", kind="Backup", namespace="default", name="nightly", object=backup)
    labels = {"kubernetes.io/metadata.name": "default"}
    assert matches(webhook(rules=[rule(groups=("stable.example.com",), resources=("backups",))]), request, namespace_labels=labels)
    assert not matches(webhook(), request, namespace_labels=labels)  # pods only
    assert matches(webhook(rules=[rule(groups=("*",), versions=("*",), resources=("*",))]), request, namespace_labels=labels)
    review = admission_review(request, "uid-1")
    assert review["request"]["resource"] == {"group": "stable.example.com", "version": "v1", "resource": "backups"}
    assert review["request"]["kind"] == {"group": "stable.example.com", "version": "v1", "kind": "Backup"}

"""Admission webhooks: matching, AdmissionReview over the simulated network, dispatch with
timeouts and failure policies, and webhook servers as simulated processes.

Modelled on kube-apiserver's webhook admission
(``staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/``: ``generic/webhook.go``,
``predicates/rules/rules.go``, ``predicates/namespace/matcher.go``,
``predicates/object/matcher.go``, ``mutating/dispatcher.go``,
``mutating/reinvocationcontext.go``, ``validating/dispatcher.go``,
``errors/statuserror.go``, ``request/admissionreview.go``; ``pkg/util/webhook/client.go``
and ``error.go``) and the docs page "Dynamic Admission Control"
(https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/).

Contract, for the API server that calls a :class:`WebhookDispatcher`:

1. Build one dispatcher per API server process: ``WebhookDispatcher(process)``. Every call
   goes out through ``process.call`` on :data:`WEBHOOK_PORT`, so kills, pauses and
   partitions of either side act on it; AdmissionReview uids come from
   ``process.random``; latencies are read from ``process.now()``.
2. After the built-in mutating plugins, ``await dispatcher.mutate(request, configs,
   namespace_labels=...)`` with the MutatingWebhookConfigurations of the informer cache and
   the labels of the request's namespace (None: the namespace does not exist). On
   ``allowed``, continue with ``result.object``. After schema validation and the built-in
   validating plugins, ``await dispatcher.validate(...)`` on the mutated request.
3. On a refusal, answer with ``result.status`` (a :class:`~chaoskube.api.protocol.Status`)
   and its code; in both cases pass ``result.warnings`` on to the client.
4. Refuse invalid configurations when they are written: :func:`validate_configuration`
   returns the causes kube-apiserver's validation gives (for a 422). A dispatcher given an
   invalid or unsupported configuration raises :class:`WebhookConfigError`.

What is modelled:

- Matching (:func:`matches`): rules (operations, apiGroups, apiVersions, resources with
  "*", "r/*", "*/sub", scope), namespaceSelector (the namespace's labels; a Namespace's own
  labels on CREATE/UPDATE; cluster-scoped objects other than Namespaces always match; a
  missing namespace answers 404 when the rules match), objectSelector (object or old
  object). ``matchPolicy`` Equivalent (the default) degenerates to Exact: every kind here is
  served at one group/version, so a resource has no equivalent other than itself.
  ValidatingWebhookConfiguration and MutatingWebhookConfiguration objects never go to
  webhooks (``rules.IsExemptAdmissionConfigurationResource``).
- Defaults (``pkg/apis/admissionregistration/v1/defaults.go``): failurePolicy Fail,
  matchPolicy Equivalent, timeoutSeconds 10, reinvocationPolicy Never, rule scope "*",
  service port 443, selectors {} (everything). sideEffects and admissionReviewVersions
  have no v1 default: they are required (``validation.go``).
- Mutating webhooks are called one after another, configurations sorted by name and
  webhooks in their order (``configuration/mutating_webhook_manager.go``), each on the
  previous one's output. A webhook with reinvocationPolicy IfNeeded is called once more
  if a later webhook changed the object (``reinvocationcontext.go``; the docs' "Reinvocation
  policy"): at most one extra round, only those webhooks.
- Validating webhooks are called in parallel (a Trio nursery, as upstream's goroutines)
  and all are awaited, so the latency is the slowest call's, not the sum.
- Call errors (refused, timed out, an error answer, an invalid AdmissionReview) obey
  failurePolicy: Fail refuses with 500 InternalError and upstream's message
  (``failed calling webhook "<name>": failed to call webhook: Post
  "https://<svc>.<ns>.svc:443/<path>?timeout=10s": context deadline exceeded``); Ignore
  lets the request through unchanged by that webhook and records the audit annotation
  ``failed-open.(mutation|validating).webhook.admission.k8s.io/round_<r>_index_<i>``.
  A denial becomes ``admission webhook "<name>" denied the request: <message>`` with the
  response's code (below 400 becomes 400, ``ToStatusErr``). A patch that does not apply,
  or whose result does not decode as the object, is a 500 whatever the failure policy, as
  upstream (``apierrors.NewInternalError``); an undecodable patch is a call error.
- An error answer (an HTTP status with a body that is not a Status) reads as client-go
  words it (:func:`generic_server_response`, after ``NewGenericServerResponse``): a 500
  gives ``failed to call webhook: an error on the server ("Internal Server Error") has
  prevented the request from succeeding``, a 503 ``... the server is currently unable to
  handle the request``.
- Webhook servers (:func:`webhook_server`) answer plain handlers at delivery and serve
  async ones in a task each; a task lives until it answers or the process dies (its
  caller's deadline does not end it, as a real server does not notice a client's timeout).

Guarantees: deterministic for a seed (uids from the process's generator; the validating
verdict is chosen in configuration order, not in order of arrival); nothing here mutates
its arguments; every call is journaled as ``{"type": "webhook-call", "server", "webhook",
"configuration", "uid", "operation", "kind", "outcome", "reason", "latency_s", "round",
"timeout_s", "policy"}`` with outcome allowed | denied | patched | error | ignored-error
(``timeout_s`` and ``policy``: the webhook's ``timeoutSeconds`` and ``failurePolicy`` as
called, for the admission-timing checker).

Non-guarantees and differences, on purpose:

- When several validating webhooks refuse, upstream reports the one whose refusal reached
  its channel first; we report the first in configuration/webhook order.
- matchConditions (CEL) are not modelled: a webhook with matchConditions is refused with
  :class:`WebhookConfigError` rather than silently called for requests upstream would skip.
- Only AdmissionReview v1 is spoken; a webhook that lists only v1beta1 is unsupported.
- The simulated network has no IP addresses: a refused connection reads ``dial tcp
  <service host>:<port>: connect: connection refused`` where upstream shows the resolved
  ClusterIP. A partitioned webhook times out (``context deadline exceeded``), as a dropped
  SYN would. Every webhook process serves :data:`WEBHOOK_PORT` whatever its numeric port.
- Not modelled: dryRun rejection for sideEffects Unknown/Some (v1 forbids them anyway), the
  API server's own request deadline, re-running the built-in plugins between rounds, the
  object defaulting upstream applies after a patch, and metrics.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import inspect
import json
import posixpath
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Union
from urllib.parse import urlsplit

import trio

from chaoskube.api.manifests import ManifestError, from_dict, to_dict
from chaoskube.api.objects import (
    KINDS,
    LabelSelector,
    MutatingWebhook,
    MutatingWebhookConfiguration,
    Object,
    RuleWithOperations,
    ValidatingWebhook,
    ValidatingWebhookConfiguration,
)
from chaoskube.api.objects import matches as selector_matches
from chaoskube.api.patch import PatchError, apply_patch, create_patch, escape_pointer_token, json_equal
from chaoskube.api.protocol import Status, internal_error, not_found
from chaoskube.apiserver.admission import AdmissionRequest
from chaoskube.sim.buggify import maybe_sleep
from chaoskube.sim.outcomes import Failed, Ok

if TYPE_CHECKING:
    from chaoskube.sim.network import Message
    from chaoskube.sim.process import Process

__all__ = [
    "ADMISSION_REVIEW_API_VERSION",
    "AdmissionResponse",
    "DEFAULT_TIMEOUT_SECONDS",
    "Endpoint",
    "InvalidWebhookResponse",
    "NamespaceNotFound",
    "WEBHOOK_PORT",
    "WebhookConfigError",
    "WebhookDispatcher",
    "WebhookResult",
    "SERVER_FAULT_KEY",
    "ServerFault",
    "WebhookServerError",
    "admission_review",
    "allow",
    "check_configuration",
    "denial_status",
    "deny",
    "deny_when",
    "failure_policy",
    "generic_server_response",
    "is_exempt",
    "label_injector",
    "matches",
    "patch_response",
    "reinvocation_policy",
    "resolve_endpoint",
    "rule_matches",
    "server_fault",
    "serving_process",
    "slow",
    "timeout_seconds",
    "unsupported_features",
    "validate_configuration",
    "verify_admission_response",
    "webhook_server",
]

#: The port every webhook process serves (HTTPS to the webhook's service or URL).
WEBHOOK_PORT = "webhook"
ADMISSION_REVIEW_API_VERSION = "admission.k8s.io/v1"
ADMISSION_REGISTRATION_GROUP = "admissionregistration.k8s.io"

# pkg/apis/admissionregistration/v1/defaults.go and validation.go.
DEFAULT_TIMEOUT_SECONDS = 10
MIN_TIMEOUT_SECONDS = 1
MAX_TIMEOUT_SECONDS = 30
DEFAULT_FAILURE_POLICY = "Fail"
DEFAULT_MATCH_POLICY = "Equivalent"
DEFAULT_REINVOCATION_POLICY = "Never"
DEFAULT_SERVICE_PORT = 443
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
SIDE_EFFECT_CLASSES = ("None", "NoneOnDryRun")  # noSideEffectClasses: v1 allows only these
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
ADMISSION_REVIEW_VERSIONS = ("v1", "v1beta1")  # AcceptedAdmissionReviewVersions

#: ``rules.IsExemptAdmissionConfigurationResource`` (the policy kinds are not modelled).
EXEMPT_KINDS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"})

#: The kind a subresource request carries, when it is not the parent's (binding, eviction).
SUBRESOURCE_KINDS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("pods", "binding"): ("", "v1", "Binding"),
    ("pods", "eviction"): ("policy", "v1", "Eviction"),
}

# Audit annotation keys (mutating/dispatcher.go, validating/dispatcher.go).
MUTATION_ANNOTATION_PREFIX = "mutation.webhook.admission.k8s.io/"
PATCH_ANNOTATION_PREFIX = "patch.webhook.admission.k8s.io/"
MUTATING_FAILED_OPEN_PREFIX = "failed-open." + MUTATION_ANNOTATION_PREFIX
VALIDATING_FAILED_OPEN_PREFIX = "failed-open.validating.webhook.admission.k8s.io/"

Webhook = Union[ValidatingWebhook, MutatingWebhook]
Configuration = Union[ValidatingWebhookConfiguration, MutatingWebhookConfiguration]
Handler = Callable[[dict[str, Any]], "dict[str, Any] | Awaitable[dict[str, Any]]"]


# =========================================================================== errors


class WebhookConfigError(ValueError):
    """A webhook configuration kube-apiserver would refuse, or one the simulation does not
    model (matchConditions, v1beta1-only). ``causes`` are field errors, upstream-worded."""

    def __init__(self, message: str, causes: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.causes = tuple(causes)


class NamespaceNotFound(Exception):
    """The request's namespace does not exist and a webhook whose rules match it has a
    namespaceSelector: upstream answers 404 (``namespace/matcher.go``). ``status`` says so."""

    def __init__(self, namespace: str) -> None:
        self.status = not_found("namespaces", namespace)
        super().__init__(self.status.message)


class InvalidWebhookResponse(ValueError):
    """An AdmissionReview answer that ``VerifyAdmissionResponse`` refuses."""


class WebhookServerError(Exception):
    """Raised by a handler of :func:`webhook_server` to answer with an HTTP error instead of
    an AdmissionReview (the dispatcher sees a failed call)."""

    def __init__(self, message: str, code: int = 500) -> None:
        super().__init__(message)
        self.code = code


# =========================================================================== effective settings


def failure_policy(webhook: Webhook) -> str:
    """``failurePolicy``, default Fail."""
    return webhook.failure_policy or DEFAULT_FAILURE_POLICY


def timeout_seconds(webhook: Webhook) -> int:
    """``timeoutSeconds``, default 10 (v1; v1beta1 defaulted to 30)."""
    return webhook.timeout_seconds if webhook.timeout_seconds is not None else DEFAULT_TIMEOUT_SECONDS


def reinvocation_policy(webhook: Webhook) -> str:
    """``reinvocationPolicy`` of a mutating webhook, default Never; validating: Never."""
    if isinstance(webhook, MutatingWebhook):
        return webhook.reinvocation_policy or DEFAULT_REINVOCATION_POLICY
    return DEFAULT_REINVOCATION_POLICY


# =========================================================================== validation
# Messages as k8s.io/apimachinery/pkg/util/validation/field words them.


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[]string{" + ", ".join(json.dumps(str(item)) for item in value) + "}"
    return str(value)


def _required(path: str, detail: str = "") -> str:
    return f"{path}: Required value" + (f": {detail}" if detail else "")


def _invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_quote(value)}: {detail}"


def _not_supported(path: str, value: Any, supported: Sequence[str]) -> str:
    return f"{path}: Unsupported value: {_quote(value)}: supported values: " + ", ".join(json.dumps(s) for s in supported)


_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _validate_name(path: str, name: str) -> list[str]:
    """``utilvalidation.IsFullyQualifiedName``."""
    if not name:
        return [_required(path)]
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        return [_invalid(path, name, _DNS1123_MESSAGE)]
    if len(name.split(".")) < 3:
        return [_invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _validate_rule(path: str, rule: RuleWithOperations) -> list[str]:
    """``validateRuleWithOperations`` (the checks of the fields matching reads)."""
    causes = []
    if not rule.operations:
        causes.append(_required(f"{path}.operations"))
    elif len(rule.operations) > 1 and "*" in rule.operations:
        causes.append(_invalid(f"{path}.operations", rule.operations, "if '*' is present, must not specify other operations"))
    for index, operation in enumerate(rule.operations):
        if operation not in OPERATIONS:
            causes.append(_not_supported(f"{path}.operations[{index}]", operation, OPERATIONS))
    for field, name in ((rule.api_groups, "apiGroups"), (rule.api_versions, "apiVersions"), (rule.resources, "resources")):
        if not field:
            causes.append(_required(f"{path}.{name}"))
    if rule.scope is not None and rule.scope not in SCOPES:
        causes.append(_not_supported(f"{path}.scope", rule.scope, SCOPES))
    return causes


def _validate_client_config(path: str, webhook: Webhook) -> list[str]:
    """The clientConfig checks (``webhook.ValidateWebhookURL`` / ``ValidateWebhookService``)."""
    config = webhook.client_config
    if (config.url is None) == (config.service is None):
        return [_required(path, "exactly one of url or service is required")]
    if config.url is not None:
        # webhook.ValidateWebhookURL(forceHttps=true): each value is the offending part.
        parts = urlsplit(config.url)
        url_path, form = f"{path}.url", "; desired format: https://host[/path]"
        causes = []
        if parts.scheme != "https":
            causes.append(_invalid(url_path, parts.scheme, "'https' is the only allowed URL scheme" + form))
        if not parts.netloc:
            causes.append(_invalid(url_path, parts.netloc, "host must be provided" + form))
        if parts.username is not None:
            causes.append(_invalid(url_path, parts.username, "user information is not permitted in the URL"))
        if parts.fragment:
            causes.append(_invalid(url_path, parts.fragment, "fragments are not permitted in the URL"))
        if parts.query:
            causes.append(_invalid(url_path, parts.query, "query parameters are not permitted in the URL"))
        return causes
    service = config.service
    assert service is not None
    causes = []
    if not service.name:
        causes.append(_required(f"{path}.service.name", "service name is required"))
    if not service.namespace:
        causes.append(_required(f"{path}.service.namespace", "service namespace is required"))
    if service.port is not None and not 1 <= service.port <= 65535:
        causes.append(_invalid(f"{path}.service.port", service.port, "port is not valid: must be between 1 and 65535, inclusive"))
    if service.path and not service.path.startswith("/"):
        causes.append(_invalid(f"{path}.service.path", service.path, "must start with a '/'"))
    return causes


def _validate_webhook(path: str, webhook: Webhook) -> list[str]:
    """``validateValidatingWebhook`` / ``validateMutatingWebhook`` with v1's options
    (``requireNoSideEffects``, ``requireRecognizedAdmissionReviewVersion``)."""
    causes = _validate_name(f"{path}.name", webhook.name)
    for index, rule in enumerate(webhook.rules):
        causes += _validate_rule(f"{path}.rules[{index}]", rule)
    if webhook.failure_policy is not None and webhook.failure_policy not in FAILURE_POLICIES:
        causes.append(_not_supported(f"{path}.failurePolicy", webhook.failure_policy, FAILURE_POLICIES))
    if webhook.match_policy is not None and webhook.match_policy not in MATCH_POLICIES:
        causes.append(_not_supported(f"{path}.matchPolicy", webhook.match_policy, MATCH_POLICIES))
    if webhook.side_effects is None:
        causes.append(_required(f"{path}.sideEffects", "must specify one of " + ", ".join(SIDE_EFFECT_CLASSES)))
    elif webhook.side_effects not in SIDE_EFFECT_CLASSES:
        causes.append(_not_supported(f"{path}.sideEffects", webhook.side_effects, SIDE_EFFECT_CLASSES))
    timeout = webhook.timeout_seconds
    if timeout is not None and not MIN_TIMEOUT_SECONDS <= timeout <= MAX_TIMEOUT_SECONDS:
        causes.append(_invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    if isinstance(webhook, MutatingWebhook) and webhook.reinvocation_policy is not None and webhook.reinvocation_policy not in REINVOCATION_POLICIES:
        causes.append(_not_supported(f"{path}.reinvocationPolicy", webhook.reinvocation_policy, REINVOCATION_POLICIES))
    causes += _validate_client_config(f"{path}.clientConfig", webhook)
    versions = webhook.admission_review_versions
    if not versions:
        causes.append(_required(f"{path}.admissionReviewVersions", "must specify one of " + ", ".join(ADMISSION_REVIEW_VERSIONS)))
    elif not any(version in ADMISSION_REVIEW_VERSIONS for version in versions):
        causes.append(_invalid(f"{path}.admissionReviewVersions", versions, "must include at least one of " + ", ".join(ADMISSION_REVIEW_VERSIONS)))
    return causes


def validate_configuration(config: Configuration) -> list[str]:
    """The field errors kube-apiserver's validation (``pkg/apis/admissionregistration/
    validation/validation.go``) gives for ``config``; empty when valid. For a 422 use
    ``protocol.invalid(config.RESOURCE, name, causes)``."""
    causes: list[str] = []
    seen: list[str] = []
    for index, webhook in enumerate(config.webhooks):
        causes += _validate_webhook(f"webhooks[{index}]", webhook)
        if webhook.name and webhook.name in seen:
            causes.append(f"webhooks[{index}].name: Duplicate value: {json.dumps(webhook.name)}")
        seen.append(webhook.name)
    return causes


def unsupported_features(config: Configuration) -> list[str]:
    """What ``config`` uses that the simulation does not model (valid upstream)."""
    causes = []
    for index, webhook in enumerate(config.webhooks):
        if webhook.match_conditions:
            causes.append(f"webhooks[{index}].matchConditions: CEL match conditions are not modelled by the simulation")
        versions = webhook.admission_review_versions
        if versions and "v1" not in versions and "v1beta1" in versions:
            causes.append(f"webhooks[{index}].admissionReviewVersions: only AdmissionReview v1 is modelled, not {_quote(versions)}")
    return causes


def _qualified_kind(config: Configuration) -> str:
    return f"{config.KIND}.{ADMISSION_REGISTRATION_GROUP}"


def check_configuration(config: Configuration) -> None:
    """Raise :class:`WebhookConfigError` if ``config`` is invalid or unsupported."""
    name = config.metadata.name
    causes = validate_configuration(config)
    if causes:
        raise WebhookConfigError(f'{_qualified_kind(config)} "{name}" is invalid: ' + ", ".join(causes), causes)
    unsupported = unsupported_features(config)
    if unsupported:
        raise WebhookConfigError(f'{_qualified_kind(config)} "{name}" is not supported: ' + ", ".join(unsupported), unsupported)


# =========================================================================== matching


def rule_matches(
    rule: RuleWithOperations,
    *,
    operation: str,
    group: str,
    version: str,
    resource: str,
    subresource: str = "",
    namespace: str = "",
) -> bool:
    """``rules.Matcher.Matches``: scope, operation, group, version and resource all match.

    "*" matches any operation, group, version or resource; ``"r/*"`` matches r and all its
    subresources, ``"*/s"`` subresource s of any resource, a bare ``"r"`` only r itself.
    Scope "Cluster" matches cluster-scoped requests (empty namespace) and Namespaces;
    "Namespaced" the others; "*" (the default) both."""
    if not _scope_matches(rule.scope, resource, namespace):
        return False
    if "*" not in rule.operations and operation not in rule.operations:
        return False
    if "*" not in rule.api_groups and group not in rule.api_groups:
        return False
    if "*" not in rule.api_versions and version not in rule.api_versions:
        return False
    return any(_resource_matches(entry, resource, subresource) for entry in rule.resources)


def _scope_matches(scope: str | None, resource: str, namespace: str) -> bool:
    if scope is None or scope == "*":
        return True
    # Namespaces are cluster-scoped, whatever namespace the request names (rules.go).
    is_namespace = resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and namespace != ""
    if scope == "Cluster":
        return is_namespace or namespace == ""
    return False


def _resource_matches(entry: str, resource: str, subresource: str) -> bool:
    wanted, _, wanted_sub = entry.partition("/")
    return (wanted == "*" or wanted == resource) and (wanted_sub == "*" or wanted_sub == subresource)


def _selector_empty(selector: LabelSelector | None) -> bool:
    """An unset selector defaults to {} (defaults.go): both select everything."""
    return selector is None or (not selector.match_labels and not selector.match_expressions)


def _namespace_selected(webhook: Webhook, request: AdmissionRequest, labels: Mapping[str, str] | None, resource: str) -> bool | None:
    """``MatchNamespaceSelector``: True / False, or None when the namespace is missing."""
    if not request.namespace and resource != "namespaces":
        return True  # cluster-scoped and not a Namespace: never exempted
    if _selector_empty(webhook.namespace_selector):
        return True
    if resource == "namespaces" and not request.subresource and request.operation in ("CREATE", "UPDATE"):
        # The Namespace being written: its own new labels (the lister has not seen them).
        own = request.object.metadata.labels if request.object is not None else {}
        return selector_matches(webhook.namespace_selector, own)
    if labels is None:
        return None
    return selector_matches(webhook.namespace_selector, labels)


def _object_selected(webhook: Webhook, request: AdmissionRequest) -> bool:
    """``MatchObjectSelector``: the new or the old object's labels satisfy the selector."""
    selector = webhook.object_selector
    if _selector_empty(selector):
        return True
    return any(obj is not None and selector_matches(selector, obj.metadata.labels) for obj in (request.object, request.old_object))


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def _resource_of(kind: str, request: AdmissionRequest | None = None) -> tuple[str, str, str]:
    """(group, version, plural resource) where ``kind`` is served; for a custom kind, where
    the request's object says (its CRD's group and version, the plural of ``<plural>.<group>``):
    webhooks see custom resources like any other (``rules`` match their group and plural)."""
    info = KINDS.get(kind)
    if info is None and request is not None:
        obj = request.object if request.object is not None else request.old_object
        if obj is not None and getattr(obj, "RESOURCE", "") and "." in obj.RESOURCE and obj.KIND == kind:
            group, version = _group_version(obj.API_VERSION)
            return group, version, obj.RESOURCE.partition(".")[0]
    assert info is not None, f"unknown kind {kind!r}: webhooks need a kind from chaoskube.api.KINDS or a custom object"
    group, version = _group_version(info.api_version)
    return group, version, info.resource


def is_exempt(request: AdmissionRequest) -> bool:
    """``IsExemptAdmissionConfigurationResource``: webhooks are never called for webhook
    configurations (so a broken webhook cannot lock its own fix out)."""
    return request.kind in EXEMPT_KINDS


def matches(
    webhook: Webhook,
    request: AdmissionRequest,
    *,
    namespace_labels: Mapping[str, str] | None,
    resource: str | None = None,
    api_group: str | None = None,
    api_version: str | None = None,
) -> bool:
    """Whether ``webhook`` is called for ``request`` (``Webhook.ShouldCallHook``).

    ``resource``/``api_group``/``api_version`` default to where ``request.kind`` is served.
    ``namespace_labels`` are the labels of the request's namespace, None if it does not
    exist. Order as upstream: a namespace or object selector that does not match skips the
    webhook; then the rules; a missing namespace raises :class:`NamespaceNotFound` only when
    the rules match. Raises :class:`WebhookConfigError` for matchConditions (not modelled)."""
    if webhook.match_conditions:
        raise WebhookConfigError(f'webhook "{webhook.name}": matchConditions (CEL) are not modelled by the simulation')
    if is_exempt(request):
        return False
    if resource is None or api_group is None or api_version is None:
        group, version, plural = _resource_of(request.kind, request)
        resource = plural if resource is None else resource
        api_group = group if api_group is None else api_group
        api_version = version if api_version is None else api_version
    namespace_ok = _namespace_selected(webhook, request, namespace_labels, resource)
    if namespace_ok is False or not _object_selected(webhook, request):
        return False
    attributes = {
        "operation": request.operation, "group": api_group, "version": api_version,
        "resource": resource, "subresource": request.subresource, "namespace": request.namespace,
    }
    if not any(rule_matches(rule, **attributes) for rule in webhook.rules):
        return False
    if namespace_ok is None:
        raise NamespaceNotFound(request.namespace or request.name)
    return True


# =========================================================================== AdmissionReview


def _operation_options(request: AdmissionRequest) -> dict[str, Any] | None:
    """``attr.GetOperationOptions()``: CreateOptions / UpdateOptions / DeleteOptions."""
    kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}.get(request.operation)
    if kind is None:
        return None
    options: dict[str, Any] = {"apiVersion": "meta.k8s.io/v1", "kind": kind}
    if request.dry_run:
        options["dryRun"] = ["All"]
    return options


def admission_review(request: AdmissionRequest, uid: str) -> dict[str, Any]:
    """``CreateV1AdmissionReview``: the AdmissionReview a webhook receives, as JSON.

    Every field of ``admission.k8s.io/v1`` AdmissionRequest that the simulation knows is
    present (upstream omits empty ``subResource``, ``name``, ``namespace``)."""
    group, version, resource = _resource_of(request.kind, request)
    kind_group, kind_version, kind = SUBRESOURCE_KINDS.get((resource, request.subresource), (group, version, request.kind))
    kind_ref = {"group": kind_group, "version": kind_version, "kind": kind}
    resource_ref = {"group": group, "version": version, "resource": resource}
    user = request.user
    return {
        "apiVersion": ADMISSION_REVIEW_API_VERSION,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": kind_ref,
            "resource": resource_ref,
            "subResource": request.subresource,
            # matchPolicy Equivalent never converts here: the request's own kind/resource.
            "requestKind": dict(kind_ref),
            "requestResource": dict(resource_ref),
            "requestSubResource": request.subresource,
            "name": request.name or (request.object.metadata.name if request.object is not None else ""),
            "namespace": request.namespace,
            "operation": request.operation,
            "userInfo": {"username": user.name, "uid": user.uid, "groups": list(user.groups)},
            "object": to_dict(request.object) if request.object is not None else None,
            "oldObject": to_dict(request.old_object) if request.old_object is not None else None,
            "dryRun": request.dry_run,
            "options": _operation_options(request),
        },
    }


@dataclass(frozen=True, slots=True)
class AdmissionResponse:
    """``request.AdmissionResponse``: what ``VerifyAdmissionResponse`` extracts."""

    allowed: bool
    status: Mapping[str, Any] | None = None
    patch: str = ""  # base64, as on the wire
    patch_type: str = ""
    warnings: tuple[str, ...] = ()
    audit_annotations: tuple[tuple[str, str], ...] = ()


def _gvk_string(review: Mapping[str, Any]) -> str:
    """``schema.GroupVersionKind.String()``: "group/version, Kind=kind"."""
    group, version = _group_version(str(review.get("apiVersion") or ""))
    return f"{group}/{version}, Kind={review.get('kind') or ''}"


def verify_admission_response(review: Any, uid: str, *, mutating: bool) -> AdmissionResponse:
    """``VerifyAdmissionResponse`` for v1: raises :class:`InvalidWebhookResponse` with
    upstream's message for an absent response, a uid or type mismatch, a validating
    webhook's patch, a patch without patchType and the reverse."""
    if not isinstance(review, Mapping) or not isinstance(review.get("response"), Mapping):
        raise InvalidWebhookResponse("webhook response was absent")
    response = review["response"]
    if response.get("uid") != uid:
        raise InvalidWebhookResponse(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    if review.get("apiVersion") != ADMISSION_REVIEW_API_VERSION or review.get("kind") != "AdmissionReview":
        raise InvalidWebhookResponse(f"expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {_gvk_string(review)}")
    patch = response.get("patch") or ""
    patch_type = response.get("patchType")
    if mutating:
        if patch and patch_type is None:
            raise InvalidWebhookResponse("webhook returned response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise InvalidWebhookResponse("webhook returned response.patchType but not response.patch")
        if patch_type is not None and not patch_type:
            raise InvalidWebhookResponse('webhook returned invalid response.patchType of ""')
    else:
        if patch:
            raise InvalidWebhookResponse("validating webhook may not return response.patch")
        if patch_type is not None:
            raise InvalidWebhookResponse("validating webhook may not return response.patchType")
    status = response.get("status")
    annotations = response.get("auditAnnotations") or {}
    return AdmissionResponse(
        allowed=response.get("allowed") is True,
        status=status if isinstance(status, Mapping) else None,
        patch=str(patch),
        patch_type=str(patch_type or ""),
        warnings=tuple(str(w) for w in response.get("warnings") or ()),
        audit_annotations=tuple((str(k), str(v)) for k, v in sorted(annotations.items())),
    )


def denial_status(webhook_name: str, status: Mapping[str, Any] | None) -> Status:
    """``webhookerrors.ToStatusErr``: a refusal's code (below 400 becomes 400), reason, and
    ``admission webhook "<name>" denied the request: <message or reason>`` (or ``... denied
    the request without explanation``)."""
    status = status or {}
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    return Status(code, reason, text)


# =========================================================================== transport


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a webhook is reached: the simulated ``process``, the ``url`` (no query) and the
    ``address`` that error messages name, the request ``path``."""

    process: str
    url: str
    address: str
    path: str


def _clean_path(path: str) -> str:
    """Go's ``path.Join("/", path)`` as the REST client builds it: "/" for none, no
    trailing slash."""
    return posixpath.normpath("/" + path.lstrip("/")) if path.strip("/") else "/"


def resolve_endpoint(webhook: Webhook) -> Endpoint:
    """``ClientManager.HookClient``: a service reference is ``https://<name>.<namespace>.svc:
    <port, default 443><path>``, served by the process ``<name>.<namespace>.svc``; a URL
    ``https://host[:port]/path`` by the process ``host``."""
    config = webhook.client_config
    if config.service is not None:
        service = config.service
        host = f"{service.name}.{service.namespace}.svc"
        port = service.port or DEFAULT_SERVICE_PORT
        path = _clean_path(service.path or "")
        return Endpoint(process=host, url=f"https://{host}:{port}{path}", address=f"{host}:{port}", path=path)
    if config.url is None:
        raise WebhookConfigError(f'webhook "{webhook.name}": exactly one of url or service is required')
    parts = urlsplit(config.url)
    if not parts.hostname:
        raise WebhookConfigError(f'webhook "{webhook.name}": host must be specified in {config.url!r}')
    path = _clean_path(parts.path)
    address = f"{parts.hostname}:{parts.port or DEFAULT_SERVICE_PORT}"
    return Endpoint(process=parts.hostname, url=f"{parts.scheme}://{parts.netloc}{path}", address=address, path=path)


def _call_error_reason(outcome: Any, endpoint: Endpoint, timeout: int) -> str:
    """The ``ErrCallingWebhook`` reason of a call that got no AdmissionReview: Go's
    ``*url.Error`` (``Post "<url>?timeout=<n>s": <cause>``) wrapped in "failed to call
    webhook" (the rest client sets ``?timeout=`` from the context deadline)."""
    post = f'Post "{endpoint.url}?timeout={timeout}s"'
    if isinstance(outcome, Failed):
        if outcome.reason == "connection refused":
            return f"failed to call webhook: {post}: dial tcp {endpoint.address}: connect: connection refused"
        value = outcome.value if isinstance(outcome.value, Mapping) else {"message": outcome.reason}
        code = value.get("code", 500)
        return f"failed to call webhook: {generic_server_response(code if isinstance(code, int) else 500, str(value.get('message', '')))}"
    return f"failed to call webhook: {post}: context deadline exceeded"


#: ``errors.NewGenericServerResponse`` (``k8s.io/apimachinery/pkg/api/errors/errors.go``):
#: the message a client-go REST client gives an error answer whose body is not a Status.
_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be processing the request",
}


def generic_server_response(code: int, server_message: str) -> str:
    """``NewGenericServerResponse``'s message for an HTTP error ``code`` whose body (here
    ``server_message``) is not a Status: fixed texts for the codes it knows, the server's
    message for 403, 406 and 415, ``an error on the server ("<body>") has prevented the
    request from succeeding`` for any other 5xx (500 among them), and ``the server
    responded with the status code <code> but did not return more information`` else."""
    if code in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[code]
    if code in (403, 406, 415):
        return server_message
    if code >= 500:
        return f"an error on the server ({json.dumps(server_message)}) has prevented the request from succeeding"
    return f"the server responded with the status code {code} but did not return more information"


# =========================================================================== dispatch


@dataclass(frozen=True, slots=True)
class WebhookResult:
    """What the webhooks of one phase decided.

    Allowed: ``status`` None, ``object`` the object to continue with (mutated by
    ``mutate``; the request's own from ``validate``), ``patches`` the RFC 6902 patch from
    the request's object to it. Refused: ``status`` says why (its ``code`` is the HTTP
    status), ``webhook`` names the webhook that refused (or whose call failed), ``object``
    is None. ``warnings`` come from every response, in call order; ``annotations`` are the
    audit annotations upstream records (mutation, patch, failed-open, the webhooks' own)."""

    allowed: bool
    object: Object | None = None
    status: Status | None = None
    patches: tuple[dict[str, Any], ...] = ()
    webhook: str = ""
    warnings: tuple[str, ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        assert self.allowed == (self.status is None), "a refusal carries a Status, an admission none"


@dataclass(frozen=True, slots=True)
class _Hook:
    """One webhook of the merged, name-sorted configurations; ``uid`` as the webhook
    manager builds it (``<configuration>/<webhook>/<n>``)."""

    configuration: str
    webhook: Webhook
    index: int
    uid: str


@dataclass(frozen=True, slots=True)
class _Reply:
    """One call: the review uid, the latency, and either a call error or a response."""

    uid: str
    latency_s: float
    error: str = ""
    response: AdmissionResponse | None = None


class _Phase:
    """What a dispatch accumulates: the current request (mutating: its current object),
    warnings and annotations."""

    def __init__(self, request: AdmissionRequest) -> None:
        self.request = request
        self.warnings: list[str] = []
        self.annotations: list[tuple[str, str]] = []

    def refuse(self, status: Status, webhook: str) -> WebhookResult:
        return WebhookResult(False, None, status, (), webhook, tuple(self.warnings), tuple(self.annotations))


def _hooks(configs: Sequence[Configuration]) -> list[_Hook]:
    """The webhooks in call order: configurations sorted by name (stable), then each
    configuration's webhooks in order (``mutating_webhook_manager.go``)."""
    hooks = []
    for config in sorted(configs, key=lambda c: c.metadata.name):
        check_configuration(config)
        seen: dict[str, int] = {}
        for webhook in config.webhooks:
            number = seen.get(webhook.name, 0)
            seen[webhook.name] = number + 1
            uid = f"{config.metadata.name}/{webhook.name}/{number}"
            hooks.append(_Hook(config.metadata.name, webhook, len(hooks), uid))
    return hooks


def _decode_patch(encoded: str) -> list[Any]:
    """base64 then JSON (``jsonpatch.DecodePatch``); raises ValueError."""
    try:
        raw = base64.b64decode(encoded, validate=True)
        operations = json.loads(raw)
    except (binascii.Error, ValueError) as error:
        raise ValueError(str(error)) from None
    if not isinstance(operations, list):
        raise ValueError(f"json: cannot unmarshal {type(operations).__name__} into Go value of type jsonpatch.Patch")
    return operations


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class WebhookDispatcher:
    """kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins,
    calling webhook processes from ``process`` (see the module contract)."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self._random = process.random("webhooks/uid")
        self._counts = {"calls": 0, "allowed": 0, "denied": 0, "patched": 0, "error": 0, "ignored-error": 0}

    def statistics(self) -> dict[str, int]:
        return dict(self._counts)

    def _new_uid(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    # -- journal --------------------------------------------------------------------------
    def _journal(self, hook: _Hook, request: AdmissionRequest, uid: str, outcome: str, reason: str, latency_s: float, round_: int) -> None:
        self._counts["calls"] += 1
        self._counts[outcome] += 1
        self.process.world.record(
            "webhook-call", server=self.process.name, webhook=hook.webhook.name, configuration=hook.configuration,
            uid=uid, operation=request.operation, kind=request.kind, outcome=outcome, reason=reason,
            latency_s=round(latency_s, 9), round=round_, request=request.request_id,
            namespace=request.namespace, name=request.name, subresource=request.subresource,
            timeout_s=timeout_seconds(hook.webhook), policy=failure_policy(hook.webhook),
        )

    # -- one call -------------------------------------------------------------------------
    async def _call(self, hook: _Hook, request: AdmissionRequest, *, mutating: bool) -> _Reply:
        """Post an AdmissionReview and verify the answer; never raises for the network."""
        endpoint = resolve_endpoint(hook.webhook)
        timeout = timeout_seconds(hook.webhook)
        uid = self._new_uid()
        body = {"path": endpoint.path, "review": admission_review(request, uid)}
        started = self.process.now()
        outcome = await self.process.call(endpoint.process, body, port=WEBHOOK_PORT, timeout_s=float(timeout))
        latency = self.process.now() - started
        if not isinstance(outcome, Ok):
            return _Reply(uid, latency, error=_call_error_reason(outcome, endpoint, timeout))
        try:
            response = verify_admission_response(outcome.value, uid, mutating=mutating)
        except InvalidWebhookResponse as error:
            return _Reply(uid, latency, error=f"received invalid webhook response: {error}")
        return _Reply(uid, latency, response=response)

    def _call_failed(self, phase: _Phase, hook: _Hook, reply: _Reply, round_: int, failed_open_key: str) -> WebhookResult | None:
        """failurePolicy: Ignore records the failed-open annotation and lets the request
        through (None); Fail refuses with 500 InternalError."""
        name = hook.webhook.name
        message = f'failed calling webhook "{name}": {reply.error}'
        if failure_policy(hook.webhook) == "Ignore":
            phase.annotations.append((failed_open_key, name))
            self._journal(hook, phase.request, reply.uid, "ignored-error", message, reply.latency_s, round_)
            return None
        self._journal(hook, phase.request, reply.uid, "error", message, reply.latency_s, round_)
        return phase.refuse(internal_error(message), name)

    def _collect(self, phase: _Phase, hook: _Hook, response: AdmissionResponse) -> None:
        phase.warnings.extend(response.warnings)
        phase.annotations.extend((f"{hook.webhook.name}/{key}", value) for key, value in response.audit_annotations)

    # -- mutating -------------------------------------------------------------------------
    async def mutate(
        self,
        request: AdmissionRequest,
        configs: Sequence[MutatingWebhookConfiguration],
        *,
        namespace_labels: Mapping[str, str] | None = None,
    ) -> WebhookResult:
        """Call the matching mutating webhooks one by one, each on the previous one's
        output; then once more those with reinvocationPolicy IfNeeded that a later webhook's
        change calls for (``mutating/dispatcher.go``, ``reinvocationcontext.go``)."""
        hooks = _hooks(configs)
        phase = _Phase(request)
        if is_exempt(request):
            return WebhookResult(True, request.object)
        previously: list[str] = []  # invoked IfNeeded webhooks, since the last change
        reinvoke: set[str] = set()
        for hook in hooks:
            refusal, changed, called = await self._mutate_one(phase, hook, namespace_labels, 0)
            if changed:
                reinvoke.update(previously)  # RequireReinvokingPreviouslyInvokedPlugins
                previously.clear()
            if called and reinvocation_policy(hook.webhook) == "IfNeeded":
                previously.append(hook.uid)
            if refusal is not None:
                return refusal
        for hook in hooks if reinvoke else ():  # one reinvocation round at most
            refusal, _, _ = await self._mutate_one(phase, hook, namespace_labels, 1, only=reinvoke)
            if refusal is not None:
                return refusal
        return self._mutated(request, phase)

    def _mutated(self, request: AdmissionRequest, phase: _Phase) -> WebhookResult:
        final = phase.request.object
        if request.object is None or final is request.object:
            return WebhookResult(True, request.object, None, (), "", tuple(phase.warnings), tuple(phase.annotations))
        patches = tuple(create_patch(to_dict(request.object), to_dict(final)))
        return WebhookResult(True, final if patches else request.object, None, patches, "", tuple(phase.warnings), tuple(phase.annotations))

    async def _mutate_one(
        self, phase: _Phase, hook: _Hook, namespace_labels: Mapping[str, str] | None, round_: int, *, only: set[str] | None = None
    ) -> tuple[WebhookResult | None, bool, bool]:
        """Match and call one mutating webhook: (refusal or None, changed, called)."""
        try:
            selected = matches(hook.webhook, phase.request, namespace_labels=namespace_labels)
        except NamespaceNotFound as missing:
            return phase.refuse(missing.status, hook.webhook.name), False, False
        if not selected or (only is not None and hook.uid not in only):
            return None, False, False
        if self.process.world.buggify.enabled:  # BUGGIFY: the dispatcher dials late
            await maybe_sleep(self.process, "webhook.dispatch")
        reply = await self._call(hook, phase.request, mutating=True)
        suffix = f"round_{round_}_index_{hook.index}"
        if reply.response is None:
            refusal, changed = self._call_failed(phase, hook, reply, round_, MUTATING_FAILED_OPEN_PREFIX + suffix), False
        else:
            refusal, changed = self._apply_response(phase, hook, reply, round_, suffix)
        # Recorded for every call, as upstream's deferred addMutationAnnotation.
        mutated = {"configuration": hook.configuration, "webhook": hook.webhook.name, "mutated": changed}
        phase.annotations.append((MUTATION_ANNOTATION_PREFIX + suffix, _compact(mutated)))
        return refusal, changed, True

    def _apply_response(self, phase: _Phase, hook: _Hook, reply: _Reply, round_: int, suffix: str) -> tuple[WebhookResult | None, bool]:
        """``callAttrMutatingHook`` after the response is verified: deny, or apply the patch."""
        response = reply.response
        assert response is not None
        name, request = hook.webhook.name, phase.request
        self._collect(phase, hook, response)
        if not response.allowed:
            status = denial_status(name, response.status)
            self._journal(hook, request, reply.uid, "denied", status.message, reply.latency_s, round_)
            return phase.refuse(status, name), False
        if not response.patch:
            self._journal(hook, request, reply.uid, "allowed", "", reply.latency_s, round_)
            return None, False
        try:
            operations = _decode_patch(response.patch)
        except ValueError as error:
            reply = replace(reply, error=f"received undecodable patch in webhook response: {error}")
            return self._call_failed(phase, hook, reply, round_, MUTATING_FAILED_OPEN_PREFIX + suffix), False
        if not operations:
            self._journal(hook, request, reply.uid, "allowed", "", reply.latency_s, round_)
            return None, False
        if request.object is None:
            message = f'admission webhook "{name}" attempted to modify the object, which is not supported for this operation'
            return self._internal(phase, hook, reply, round_, message), False
        if response.patch_type != "JSONPatch":
            reply = replace(reply, error=f'unsupported patch type "{response.patch_type}"')
            return self._call_failed(phase, hook, reply, round_, MUTATING_FAILED_OPEN_PREFIX + suffix), False
        return self._patch(phase, hook, reply, round_, suffix, operations)

    def _patch(self, phase: _Phase, hook: _Hook, reply: _Reply, round_: int, suffix: str, operations: list[Any]) -> tuple[WebhookResult | None, bool]:
        request = phase.request
        assert request.object is not None
        before = to_dict(request.object)
        try:
            patched = from_dict(apply_patch(before, operations), source=f'patch of webhook "{hook.webhook.name}"')
        except (PatchError, ManifestError) as error:
            return self._internal(phase, hook, reply, round_, str(error)), False
        if patched.KIND != request.object.KIND:
            return self._internal(phase, hook, reply, round_, f"the patch changed the kind to {patched.KIND}"), False
        changed = not json_equal(before, to_dict(patched))
        patch_note = {"configuration": hook.configuration, "webhook": hook.webhook.name, "patch": operations, "patchType": "JSONPatch"}
        phase.annotations.append((PATCH_ANNOTATION_PREFIX + suffix, _compact(patch_note)))
        phase.request = replace(request, object=patched)
        self._journal(hook, request, reply.uid, "patched" if changed else "allowed", "", reply.latency_s, round_)
        return None, changed

    def _internal(self, phase: _Phase, hook: _Hook, reply: _Reply, round_: int, message: str) -> WebhookResult:
        """``apierrors.NewInternalError``: refuses whatever the failure policy."""
        status = internal_error(message)
        self._journal(hook, phase.request, reply.uid, "error", status.message, reply.latency_s, round_)
        return phase.refuse(status, hook.webhook.name)

    # -- validating -----------------------------------------------------------------------
    async def validate(
        self,
        request: AdmissionRequest,
        configs: Sequence[ValidatingWebhookConfiguration],
        *,
        namespace_labels: Mapping[str, str] | None = None,
    ) -> WebhookResult:
        """Call the matching validating webhooks in parallel, wait for all, and refuse with
        the first refusal in configuration/webhook order (``validating/dispatcher.go``)."""
        hooks = _hooks(configs)
        phase = _Phase(request)
        if is_exempt(request):
            return WebhookResult(True, request.object)
        relevant: list[_Hook] = []
        for hook in hooks:
            try:
                if matches(hook.webhook, request, namespace_labels=namespace_labels):
                    relevant.append(hook)
            except NamespaceNotFound as missing:
                return phase.refuse(missing.status, hook.webhook.name)
        replies: list[_Reply | None] = [None] * len(relevant)

        async def call(position: int, hook: _Hook) -> None:
            if self.process.world.buggify.enabled:  # BUGGIFY: the dispatcher dials late
                await maybe_sleep(self.process, "webhook.dispatch")
            reply = replies[position] = await self._call(hook, request, mutating=False)
            self._journal_validating(hook, request, reply)

        async with trio.open_nursery() as nursery:
            for position, hook in enumerate(relevant):
                nursery.start_soon(call, position, hook)
        return self._verdict(phase, relevant, replies)

    def _journal_validating(self, hook: _Hook, request: AdmissionRequest, reply: _Reply) -> None:
        """Journal at completion (so the journal shows when each answer came)."""
        name = hook.webhook.name
        if reply.response is None:
            outcome = "ignored-error" if failure_policy(hook.webhook) == "Ignore" else "error"
            self._journal(hook, request, reply.uid, outcome, f'failed calling webhook "{name}": {reply.error}', reply.latency_s, 0)
        elif reply.response.allowed:
            self._journal(hook, request, reply.uid, "allowed", "", reply.latency_s, 0)
        else:
            self._journal(hook, request, reply.uid, "denied", denial_status(name, reply.response.status).message, reply.latency_s, 0)

    def _verdict(self, phase: _Phase, relevant: list[_Hook], replies: list[_Reply | None]) -> WebhookResult:
        refusal: WebhookResult | None = None
        for position, (hook, reply) in enumerate(zip(relevant, replies)):
            assert reply is not None, "every validating call is awaited"
            name = hook.webhook.name
            if reply.response is None:
                if failure_policy(hook.webhook) == "Ignore":
                    phase.annotations.append((f"{VALIDATING_FAILED_OPEN_PREFIX}round_0_index_{position}", name))
                elif refusal is None:
                    refusal = phase.refuse(internal_error(f'failed calling webhook "{name}": {reply.error}'), name)
                continue
            self._collect(phase, hook, reply.response)
            if not reply.response.allowed and refusal is None:
                refusal = phase.refuse(denial_status(name, reply.response.status), name)
        if refusal is not None:
            # Warnings and annotations of every webhook, as upstream collects them all.
            return replace(refusal, warnings=tuple(phase.warnings), annotations=tuple(phase.annotations))
        return WebhookResult(True, phase.request.object, None, (), "", tuple(phase.warnings), tuple(phase.annotations))


# =========================================================================== webhook servers

_SERVING: contextvars.ContextVar[Process] = contextvars.ContextVar("chaoskube_webhook_process")


def serving_process() -> Process:
    """The webhook process serving the current request; for async handlers only (they run
    in a task of that process, so they can ``await serving_process().sleep(...)``)."""
    try:
        return _SERVING.get()
    except LookupError:
        raise RuntimeError("serving_process() is only available inside an async webhook handler") from None


def _review_response(request: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """Wrap a handler's response in an AdmissionReview; its uid defaults to the request's."""
    assert isinstance(response, Mapping), f"a webhook handler returns a response dict, not {type(response).__name__}"
    body = {"uid": request.get("uid"), **response}
    return {"apiVersion": ADMISSION_REVIEW_API_VERSION, "kind": "AdmissionReview", "response": body}


def _route(handler: Handler | Mapping[str, Handler], path: str) -> Handler | None:
    if isinstance(handler, Mapping):
        return handler.get(path)
    return handler


def _error_body(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}


#: Where a webhook process keeps its :class:`ServerFault` (``process.memory``).
SERVER_FAULT_KEY = "webhook-server/fault"
# Go's net/http StatusText for the codes a fault is likely to use.
_STATUS_TEXT = {
    400: "Bad Request", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout", 429: "Too Many Requests",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}


def _status_text(code: int) -> str:
    return _STATUS_TEXT.get(code, f"HTTP {code}")


@dataclass(slots=True)
class ServerFault:
    """What a fault makes the webhook server of one process incarnation do instead of
    its handler: ``error_code`` (an HTTP status, 400..599) answers every request with that
    error; None serves normally. Set by faults/kinds.py ``webhook-error``."""

    error_code: int | None = None


def server_fault(process: Process) -> ServerFault:
    """The :class:`ServerFault` of ``process``'s current incarnation, made on first use."""
    fault = process.memory.get(SERVER_FAULT_KEY)
    if fault is None:
        fault = process.memory[SERVER_FAULT_KEY] = ServerFault()
    return fault


async def _serve(process: Process, message: Message, request: Mapping[str, Any], pending: Awaitable[Any]) -> None:
    _SERVING.set(process)  # this task's own context: visible to the handler's coroutine
    try:
        response = await pending
    except WebhookServerError as error:
        process.reply(message, _error_body(error.code, str(error)), ok=False)
        return
    process.reply(message, _review_response(request, response))


def webhook_server(handler: Handler | Mapping[str, Handler]) -> Callable[[Process], Awaitable[None]]:
    """A process main that serves AdmissionReviews on :data:`WEBHOOK_PORT`.

    ``handler(request) -> response`` takes the review's ``request`` dict and returns the
    ``response`` dict (its ``uid`` defaults to the request's); a mapping routes by path.
    A plain handler runs at delivery; one that returns an awaitable (``async def``) is
    served in a task of the process, so it can sleep and is cancelled if the process is
    killed. A handler raising :class:`WebhookServerError` answers with an HTTP error; an
    unknown path answers 404. While the process's :class:`ServerFault` has an
    ``error_code``, every request is answered with that HTTP error and its status text
    (Go's ``http.StatusText``) as the body, before the handler: a broken deployment
    of the webhook. The process keeps no state across restarts."""

    async def main(process: Process) -> None:
        def on_request(message: Message) -> None:
            fault = process.memory.get(SERVER_FAULT_KEY)
            if fault is not None and fault.error_code is not None:
                process.reply(message, _error_body(fault.error_code, _status_text(fault.error_code)), ok=False)
                return
            body = message.body if isinstance(message.body, Mapping) else {}
            review = body.get("review")
            request = review.get("request") if isinstance(review, Mapping) else None
            if not isinstance(request, Mapping):
                process.reply(message, _error_body(400, "the body is not an AdmissionReview request"), ok=False)
                return
            chosen = _route(handler, str(body.get("path", "/")))
            if chosen is None:
                process.reply(message, _error_body(404, "404 page not found"), ok=False)
                return
            try:
                response = chosen(request)
            except WebhookServerError as error:
                process.reply(message, _error_body(error.code, str(error)), ok=False)
                return
            if inspect.isawaitable(response):
                process.start_soon(_serve, process, message, request, response, name=f"{process.name}:webhook")
                return
            process.reply(message, _review_response(request, response))

        process.on_message(WEBHOOK_PORT, on_request)
        await trio.sleep_forever()

    return main


# -- ready-made handlers -----------------------------------------------------------------------


def patch_response(operations: Sequence[Mapping[str, Any]], *, warnings: Sequence[str] = ()) -> dict[str, Any]:
    """An allowing response with a JSON patch (base64 of its JSON, patchType JSONPatch);
    with no operations, a plain allow."""
    response: dict[str, Any] = {"allowed": True}
    if operations:
        response["patch"] = base64.b64encode(json.dumps(list(operations)).encode()).decode()
        response["patchType"] = "JSONPatch"
    if warnings:
        response["warnings"] = list(warnings)
    return response


def allow(*, warnings: Sequence[str] = ()) -> Handler:
    """Allow everything (with ``warnings``, if any)."""
    def handle(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True, "warnings": list(warnings)} if warnings else {"allowed": True}

    return handle


_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError"}


def _denied(message: str, code: int, reason: str | None) -> dict[str, Any]:
    # controller-runtime's admission.Denied answers 403 Forbidden the same way.
    status = {"code": code, "message": message, "reason": _REASONS.get(code, "") if reason is None else reason}
    return {"allowed": False, "status": status}


def deny(message: str, *, code: int = 403, reason: str | None = None) -> Handler:
    """Refuse everything with ``message`` and ``code`` (reason from the code by default)."""
    def handle(request: dict[str, Any]) -> dict[str, Any]:
        return _denied(message, code, reason)

    return handle


def deny_when(predicate: Callable[[dict[str, Any]], bool], message: str, *, code: int = 403) -> Handler:
    """Refuse the requests for which ``predicate(request)`` holds; allow the others."""
    def handle(request: dict[str, Any]) -> dict[str, Any]:
        return _denied(message, code, None) if predicate(request) else {"allowed": True}

    return handle


def label_injector(key: str, value: str) -> Handler:
    """A mutating handler that sets label ``key`` to ``value`` with a JSON patch: adds the
    labels map when the object has none, escapes "~" and "/" in the key (RFC 6901), and
    sends no patch when the label is already there (so it is idempotent)."""
    def handle(request: dict[str, Any]) -> dict[str, Any]:
        obj = request.get("object")
        if not isinstance(obj, Mapping):
            return {"allowed": True}
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping):
            return patch_response([{"op": "add", "path": "/metadata", "value": {"labels": {key: value}}}])
        labels = metadata.get("labels")
        if not isinstance(labels, Mapping):
            return patch_response([{"op": "add", "path": "/metadata/labels", "value": {key: value}}])
        if labels.get(key) == value:
            return {"allowed": True}
        return patch_response([{"op": "add", "path": f"/metadata/labels/{escape_pointer_token(key)}", "value": value}])

    return handle


def slow(handler: Handler, delay_s: float) -> Handler:
    """``handler``, answering after ``delay_s`` of the webhook process's clock (it stops
    while the process is paused; a kill cancels it)."""
    assert delay_s >= 0, "a delay cannot be negative"

    async def handle(request: dict[str, Any]) -> dict[str, Any]:
        await serving_process().sleep(delay_s)
        response = handler(request)
        if inspect.isawaitable(response):
            response = await response
        return response

    return handle

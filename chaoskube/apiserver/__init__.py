"""kube-apiserver, as ``k8s.io/apiserver``: the server process and its pipeline —
authentication, Node and RBAC authorization, admission with built-in plugins and webhooks,
validation, etcd storage with optimistic concurrency, subresources, the watch cache and the
bootstrap policy. Imports ``chaoskube.api``, ``chaoskube.etcd`` and ``chaoskube.sim``,
never ``chaoskube.client``. See docs/api-server.md."""


from chaoskube.apiserver.admission import (
    AdmissionRequest,
    AdmissionResult,
    DefaultingPlugin,
    DefaultTolerationSecondsPlugin,
    MutatingPlugin,
    NamespaceLifecyclePlugin,
    NodeRestrictionPlugin,
    Operation,
    PriorityPlugin,
    ServiceAccountPlugin,
    ValidatingPlugin,
    default_plugins,
    forbidden_by_admission,
    node_identity,
    run_chain,
    run_mutating,
    run_validating,
)
from chaoskube.apiserver.auth import (
    VERBS,
    Attributes,
    AuthorizationDecision,
    authorize,
    authorize_node,
    authorize_rbac,
    forbidden_message,
    rule_allows,
)
from chaoskube.apiserver.server import (
    ApiServer,
    ApiServerConfig,
    spawn_api_servers,
)
from chaoskube.apiserver.watchcache import (
    Cacher,
    ResourceCache,
)
from chaoskube.apiserver.webhooks import (
    WEBHOOK_PORT,
    WebhookDispatcher,
    WebhookResult,
    label_injector,
    webhook_server,
)
from chaoskube.apiserver.webhooks import (
    matches as webhook_matches,
)

__all__ = [
    "AdmissionRequest",
    "AdmissionResult",
    "ApiServer",
    "ApiServerConfig",
    "Attributes",
    "AuthorizationDecision",
    "Cacher",
    "DefaultTolerationSecondsPlugin",
    "DefaultingPlugin",
    "MutatingPlugin",
    "NamespaceLifecyclePlugin",
    "NodeRestrictionPlugin",
    "Operation",
    "PriorityPlugin",
    "ResourceCache",
    "ServiceAccountPlugin",
    "VERBS",
    "ValidatingPlugin",
    "WEBHOOK_PORT",
    "WebhookDispatcher",
    "WebhookResult",
    "authorize",
    "authorize_node",
    "authorize_rbac",
    "default_plugins",
    "forbidden_by_admission",
    "forbidden_message",
    "label_injector",
    "node_identity",
    "rule_allows",
    "run_chain",
    "run_mutating",
    "run_validating",
    "spawn_api_servers",
    "webhook_matches",
    "webhook_server",
]

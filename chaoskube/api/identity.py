"""Who talks to the API server: the identities and groups of Kubernetes' authentication,
and the credentials clients present.

Shared by both sides of the API (``k8s.io/apiserver/pkg/authentication/user`` and
``.../serviceaccount/util.go`` name them; ``pkg/auth/nodeidentifier/default.go`` says who
is a node): the API server authenticates a :class:`~chaoskube.api.protocol.Credentials`
into a :class:`UserInfo` (``chaoskube.apiserver``); clients and components build their
credentials with :func:`admin_credentials`, :func:`node_credentials`,
:func:`user_credentials` and :func:`service_account_credentials`, without importing the
server. Everything here is pure data and pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chaoskube.api.objects import validate_name
from chaoskube.api.protocol import Credentials

__all__ = [
    "ADMIN_TOKEN",
    "ANONYMOUS_USER",
    "AUTHENTICATED_GROUP",
    "KUBE_CONTROLLER_MANAGER_USER",
    "KUBE_SCHEDULER_USER",
    "MASTERS_GROUP",
    "NODES_GROUP",
    "NODE_LEASE_NAMESPACE",
    "NODE_USER_PREFIX",
    "SERVICE_ACCOUNTS_GROUP",
    "SERVICE_ACCOUNT_USER_PREFIX",
    "UNAUTHENTICATED_GROUP",
    "UserInfo",
    "admin_credentials",
    "authenticated_user",
    "controller_manager_user",
    "node_credentials",
    "node_name_of",
    "node_user",
    "parse_service_account",
    "parse_service_account_token",
    "scheduler_user",
    "service_account_credentials",
    "service_account_user",
    "service_account_username",
    "superuser",
    "user_credentials",
]

#: The superuser group: the API server allows every request of its members
#: (``user.SystemPrivilegedGroup``), before any authorizer is asked.
MASTERS_GROUP = "system:masters"
#: Every authenticated request carries this group (the authenticator's group adder).
AUTHENTICATED_GROUP = "system:authenticated"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
ANONYMOUS_USER = "system:anonymous"
#: Kubelets authenticate as ``system:node:<nodeName>`` in this group.
NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"
#: Every service account is in this group, and in ``system:serviceaccounts:<namespace>``.
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"
KUBE_CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
KUBE_SCHEDULER_USER = "system:kube-scheduler"
#: Where kubelets keep their node Leases (``corev1.NamespaceNodeLease``).
NODE_LEASE_NAMESPACE = "kube-node-lease"

@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who made a request, as an authenticator answers it (``user.Info``)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    def __post_init__(self) -> None:
        # Accept any iterable of groups but keep the record hashable and immutable.
        object.__setattr__(self, "groups", tuple(self.groups))
        assert all(isinstance(group, str) for group in self.groups), self.groups


def authenticated_user(name: str, groups: Iterable[str] = (), uid: str = "") -> UserInfo:
    """A user authenticated by certificate or token: its groups plus ``system:authenticated``."""
    assert name, "an authenticated user has a name"
    listed = tuple(groups)
    return UserInfo(name, listed if AUTHENTICATED_GROUP in listed else (*listed, AUTHENTICATED_GROUP), uid)


def superuser(name: str = "kubernetes-super-admin") -> UserInfo:
    """A member of ``system:masters`` (kubeadm's ``super-admin.conf`` identity by default)."""
    return authenticated_user(name, (MASTERS_GROUP,))


def service_account_username(namespace: str, name: str) -> str:
    """``system:serviceaccount:<namespace>:<name>`` (``serviceaccount.MakeUsername``)."""
    return f"{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}"


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """A service account's identity and groups (``serviceaccount.UserInfo``)."""
    assert validate_name("label", namespace) is None, namespace
    assert validate_name("subdomain", name) is None, name
    groups = (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}", AUTHENTICATED_GROUP)
    return UserInfo(service_account_username(namespace, name), groups, uid)


def parse_service_account(username: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of a service account username, or None for any other name.

    As ``serviceaccount.SplitUsername``: exactly two parts after the prefix, the namespace a
    DNS-1123 label, the name a DNS-1123 subdomain.
    """
    if not username.startswith(SERVICE_ACCOUNT_USER_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_USER_PREFIX) :].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if validate_name("label", namespace) is not None or validate_name("subdomain", name) is not None:
        return None
    return namespace, name


def node_user(node_name: str) -> UserInfo:
    """A kubelet's identity: ``system:node:<nodeName>`` in ``system:nodes``."""
    assert node_name, "a kubelet authenticates with its node's name"
    return authenticated_user(f"{NODE_USER_PREFIX}{node_name}", (NODES_GROUP,))


def node_name_of(user: UserInfo) -> str | None:
    """The node a user is, or None when it is not a node (``nodeidentifier.NodeIdentity``).

    A node is a ``system:node:``-prefixed name *and* membership of ``system:nodes``; either
    alone is not enough. ``system:node:`` with nothing after it gives "" (a node whose name is
    unknown), which every node rule denies.
    """
    if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return None
    return user.name[len(NODE_USER_PREFIX) :]


def controller_manager_user() -> UserInfo:
    """The controller manager's own identity (its client certificate's common name)."""
    return authenticated_user(KUBE_CONTROLLER_MANAGER_USER)


def scheduler_user() -> UserInfo:
    """The scheduler's own identity (its client certificate's common name)."""
    return authenticated_user(KUBE_SCHEDULER_USER)


# =========================================================================== credentials
#: The token of the cluster's administrator (kubeadm's ``admin.conf`` user) in the default
#: static token file.
ADMIN_TOKEN = "chaoskube-admin-token"


def admin_credentials() -> Credentials:
    return Credentials(token=ADMIN_TOKEN)


def node_credentials(node_name: str) -> Credentials:
    """A kubelet's client certificate: ``CN=system:node:<name>, O=system:nodes``."""
    return Credentials(common_name=f"system:node:{node_name}", organizations=("system:nodes",))


def user_credentials(name: str, groups: Iterable[str] = ()) -> Credentials:
    """A client certificate for ``name`` in ``groups`` (kube-scheduler, controller-manager,
    or any user)."""
    return Credentials(common_name=name, organizations=tuple(groups))


def service_account_credentials(namespace: str, name: str, uid: str = "") -> Credentials:
    """A service account's token: valid while the account exists. With ``uid`` it is a
    *bound* token (what the TokenRequest API issues, KEP-1205): it names the account's
    ``metadata.uid`` too, so it dies with that account and does not come back to life when
    an account of the same name is created again (the API server compares the uid, as
    ``pkg/serviceaccount/claims.go`` ``Validate`` does: kubernetes/kubernetes#62993 fixed
    a comparison that let such tokens through). Without ``uid`` it is a legacy token,
    valid for any account of that name."""
    return Credentials(token=f"serviceaccount:{namespace}:{name}" + (f":{uid}" if uid else ""))


def parse_service_account_token(token: str) -> tuple[str, str, str] | None:
    """``(namespace, name, uid)`` of a token made by :func:`service_account_credentials`
    (``uid`` "" for a legacy token), or None for any other token."""
    if not token.startswith("serviceaccount:"):
        return None
    parts = token.split(":")
    if len(parts) not in (3, 4) or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2], parts[3] if len(parts) == 4 else ""

"""The HTTPS front of the simulated API servers: what real clients (kubectl, client-go, the
Python client, kopf) talk to. See :mod:`chaoskube.apiserver.http.front` and
docs/api-server.md ("The HTTP front")."""

from chaoskube.apiserver.http.certs import CertificateAuthority, Identity, KeyPair, kubeconfig, parse_identity, write_kubeconfig
from chaoskube.apiserver.http.front import ApiFront, FrontConfig, ServerTLS

__all__ = [
    "ApiFront",
    "CertificateAuthority",
    "FrontConfig",
    "Identity",
    "KeyPair",
    "ServerTLS",
    "kubeconfig",
    "parse_identity",
    "write_kubeconfig",
]

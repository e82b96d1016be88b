"""TLS for the HTTP front: a generated certificate authority, the serving certificate of
the listeners, client certificates for the users a kubeconfig names, and the kubeconfig.

Why ``cryptography`` (and not ``trustme``): a Kubernetes client certificate carries the
user in its subject's CN and each group in one O attribute (``kubeadm``'s admin.conf: CN
``kubernetes-admin``, O ``system:masters``; "X509 client certificates",
https://kubernetes.io/docs/reference/access-authn-authz/authentication/#x509-client-certificates).
trustme issues client certificates with at most one organization name, so users with
several groups could not be expressed; ``cryptography`` (which trustme itself builds on,
and which is already on the machine) gives the X.509 builder directly.

Keys are ECDSA P-256 (fast to generate; accepted by Go's and OpenSSL's TLS stacks). They
come from the operating system's randomness: a live run is not replayable anyway, and no
certificate or key is ever journaled. Validity: from one hour before generation (clock
skew) for 30 days.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CertificateAuthority",
    "Identity",
    "KeyPair",
    "kubeconfig",
    "parse_identity",
    "write_kubeconfig",
]

VALIDITY = _dt.timedelta(days=30)
BACKDATE = _dt.timedelta(hours=1)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, PEM-encoded."""

    certificate: bytes
    key: bytes


@dataclass(frozen=True)
class Identity:
    """A user of the kubeconfig: a client certificate with CN ``user`` and one O per group,
    or, when ``token`` is set, a bearer token (a service account's is
    ``serviceaccount:<namespace>:<name>``, as the simulation's authenticator reads it)."""

    name: str  # the kubeconfig's user entry
    user: str = ""
    groups: tuple[str, ...] = ()
    token: str = ""


def parse_identity(text: str) -> Identity:
    """``USER[:GROUP,GROUP...]`` (a client certificate) or ``serviceaccount:NS/NAME`` (a
    token). Raises ValueError with a one-line message."""
    text = text.strip()
    if text.startswith("serviceaccount:"):
        namespace, _, name = text.removeprefix("serviceaccount:").partition("/")
        if not namespace or not name:
            raise ValueError(f"identity {text!r}: a service account is serviceaccount:NAMESPACE/NAME")
        return Identity(name=f"{namespace}-{name}", token=f"serviceaccount:{namespace}:{name}")
    user, _, groups = text.partition(":")
    if not user:
        raise ValueError(f"identity {text!r}: give USER or USER:GROUP,GROUP")
    return Identity(name=user, user=user, groups=tuple(group for group in groups.split(",") if group))


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


class CertificateAuthority:
    """A self-signed CA that issues the serving and client certificates."""

    def __init__(self, common_name: str = "chaoskube-ca") -> None:
        self._key = _key()
        now = _dt.datetime.now(_dt.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        self._name = name
        self._certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False, key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )

    @property
    def certificate(self) -> bytes:
        return self._certificate.public_bytes(serialization.Encoding.PEM)

    def _issue(self, subject: x509.Name, *, server_hosts: Sequence[str] = (), client: bool = False) -> KeyPair:
        key = _key()
        now = _dt.datetime.now(_dt.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=False, crl_sign=False, content_commitment=False, data_encipherment=False, key_agreement=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH]
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        if server_hosts:
            names: list[x509.GeneralName] = []
            for host in server_hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self._key, hashes.SHA256())
        return KeyPair(certificate.public_bytes(serialization.Encoding.PEM), _pem_key(key))

    def issue_server(self, hosts: Iterable[str] = ("127.0.0.1", "localhost")) -> KeyPair:
        """The listeners' serving certificate (CN ``kube-apiserver``), valid for ``hosts``."""
        hosts = list(hosts)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
        return self._issue(subject, server_hosts=hosts)

    def issue_client(self, user: str, groups: Iterable[str] = ()) -> KeyPair:
        """A client certificate: CN ``user``, one O per group (Kubernetes' mapping)."""
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        return self._issue(x509.Name(attributes), client=True)


def kubeconfig(ca: bytes, servers: Sequence[tuple[str, str]], users: Sequence[tuple[Identity, KeyPair | None]], *, current_user: str, namespace: str = "default") -> dict:
    """A kubeconfig (``clientcmd/api/v1``): one cluster per ``(name, url)`` of ``servers``
    (the first is the current context's), one context per (cluster, user) pair, the CA and
    credentials inline (``*-data`` fields, base64)."""
    import base64

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    clusters = [{"name": name, "cluster": {"server": url, "certificate-authority-data": b64(ca)}} for name, url in servers]
    entries = []
    for identity, pair in users:
        if identity.token:
            entries.append({"name": identity.name, "user": {"token": identity.token}})
        else:
            assert pair is not None, f"{identity.name} needs a client certificate"
            entries.append({"name": identity.name, "user": {"client-certificate-data": b64(pair.certificate), "client-key-data": b64(pair.key)}})
    contexts = []
    for cluster_name, _ in servers:
        for identity, _ in users:
            context = cluster_name if identity.name == current_user else f"{cluster_name}-{identity.name}"
            contexts.append({"name": context, "context": {"cluster": cluster_name, "user": identity.name, "namespace": namespace}})
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": clusters,
        "users": entries,
        "contexts": contexts,
        "current-context": servers[0][0],
    }


def write_kubeconfig(path: str | Path, config: dict) -> Path:
    """Write ``config`` as YAML, readable by its owner only (it holds private keys)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(config, sort_keys=False)
    target.touch(mode=0o600, exist_ok=True)
    target.chmod(0o600)
    target.write_text(text)
    return target

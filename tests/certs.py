"""Certificates made for a test: a CA, and server and client certificates it signs, written as
PEM files (cryptography; nothing is read from disk that the test did not write)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Authority", "Issued"]


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, as PEM files."""

    cert_file: str
    key_file: str


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class Authority:
    """A certificate authority of its own, in `directory` (ca.pem): `server()` and `client()` issue
    certificates signed by it."""

    def __init__(self, directory: Path, name: str = "trainledger test CA") -> None:
        self.directory, self.name = directory, name
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.ca_file = str(directory / "ca.pem")
        Path(self.ca_file).write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def server(self, name: str = "server", hosts: tuple[str, ...] = ("localhost", "127.0.0.1")) -> Issued:
        """A server certificate for `hosts` (DNS names and IP addresses)."""
        alternatives: list[x509.GeneralName] = []
        for host in hosts:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                alternatives.append(x509.DNSName(host))
        return self._issue(name, ExtendedKeyUsageOID.SERVER_AUTH, x509.SubjectAlternativeName(alternatives))

    def client(self, name: str = "client") -> Issued:
        """A client certificate (for mutual TLS)."""
        return self._issue(name, ExtendedKeyUsageOID.CLIENT_AUTH, None)

    def _issue(
        self, name: str, usage: x509.ObjectIdentifier, alternatives: x509.SubjectAlternativeName | None
    ) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if alternatives is not None:
            builder = builder.add_extension(alternatives, critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        issued = Issued(str(self.directory / f"{name}.pem"), str(self.directory / f"{name}-key.pem"))
        Path(issued.cert_file).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        Path(issued.key_file).write_bytes(_key_pem(key))
        return issued

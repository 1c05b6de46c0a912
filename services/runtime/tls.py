"""TLS for the server: `serve --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]`.

The certificate chain and its key are read once at start (no reload). With a client CA the
server asks every client for a certificate and refuses, in the handshake, one that is missing or
not signed by that CA (mutual TLS); without one any client may connect and the bearer token (if
authentication is on) says who it is. The dashboard serves HTTPS with the same files and the
same rule (`ssl_context`), so its port is never the plaintext way around gRPC's.
"""

from __future__ import annotations

import argparse
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import grpc

__all__ = ["ServerTLS", "TLSError", "add_arguments", "from_arguments"]


class TLSError(Exception):
    """A certificate, key or CA file cannot be read or is not PEM."""


def _read_pem(path: str, what: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise TLSError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    if b"-----BEGIN " not in data:
        raise TLSError(f"the {what} {path} is not a PEM file")
    return data


@dataclass(frozen=True, slots=True)
class ServerTLS:
    """The files of a TLS server: its certificate chain and private key (PEM), and optionally the
    CA whose client certificates it requires (mutual TLS)."""

    cert_file: str
    key_file: str
    client_ca_file: str = ""

    @property
    def mutual(self) -> bool:
        """Whether clients must present a certificate signed by client_ca_file."""
        return bool(self.client_ca_file)

    def describe(self) -> str:
        """ "TLS" or "mutual TLS", for the serving line."""
        return "mutual TLS" if self.mutual else "TLS"

    def credentials(self) -> grpc.ServerCredentials:
        """The server credentials; raises TLSError naming a file that cannot be used."""
        import grpc  # Here, so that the CLI's parser does not load grpc.

        chain = _read_pem(self.cert_file, "TLS certificate")
        key = _read_pem(self.key_file, "TLS key")
        if b"PRIVATE KEY-----" not in key:
            raise TLSError(f"the TLS key {self.key_file} holds no private key")
        client_ca = _read_pem(self.client_ca_file, "TLS client CA") if self.mutual else None
        return grpc.ssl_server_credentials([(key, chain)], root_certificates=client_ca, require_client_auth=self.mutual)

    def ssl_context(self) -> ssl.SSLContext:
        """The dashboard's HTTPS context: the same certificate chain and key, TLS 1.2 or later,
        HTTP/1.1, and with a client CA a certificate it signed required in the handshake. Raises
        TLSError naming a file that cannot be used."""
        for path, what in ((self.cert_file, "TLS certificate"), (self.key_file, "TLS key")):
            _read_pem(path, what)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as error:
            raise TLSError(f"the TLS key {self.key_file} does not fit {self.cert_file}: {error}") from None
        if self.mutual:
            _read_pem(self.client_ca_file, "TLS client CA")
            try:
                context.load_verify_locations(cafile=self.client_ca_file)
            except (OSError, ssl.SSLError) as error:
                raise TLSError(f"the TLS client CA {self.client_ca_file} cannot be used: {error}") from None
            context.verify_mode = ssl.CERT_REQUIRED
        return context


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """`serve --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]`."""
    serve.add_argument("--tls-cert", default="", metavar="FILE", help="serve TLS with this certificate chain (PEM)")
    serve.add_argument("--tls-key", default="", metavar="FILE", help="the private key of --tls-cert (PEM)")
    serve.add_argument(
        "--tls-client-ca",
        default="",
        metavar="FILE",
        help="mutual TLS: require client certificates signed by this CA (PEM)",
    )


def from_arguments(args: argparse.Namespace) -> ServerTLS | None:
    """The ServerTLS that serve's options ask for, or None; raises TLSError for an incomplete set."""
    cert, key, client_ca = args.tls_cert, args.tls_key, args.tls_client_ca
    if not (cert or key or client_ca):
        return None
    if not (cert and key):
        raise TLSError("TLS needs both --tls-cert and --tls-key")
    return ServerTLS(cert, key, client_ca)

"""TLS for the server: `serve --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]`.

The certificate chain and its key are read once at start (no reload). With a client CA the
server asks every client for a certificate and refuses, in the handshake, one that is missing or
not signed by that CA (mutual TLS); without one any client may connect and the bearer token (if
authentication is on) says who it is.
"""

from __future__ import annotations

import argparse
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

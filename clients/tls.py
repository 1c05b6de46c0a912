"""TLS for the clients: `LedgerClient(..., tls=True)` (the system's root certificates) or
`tls=TLS(ca_file=..., cert_file=..., key_file=..., server_name=...)` (a private CA, a client
certificate for mutual TLS, the name to check the server's certificate against).

Without `tls` a client takes it from the environment, so an integration that builds its own client
speaks TLS when the process is told to: TRAINLEDGER_TLS=1 (system roots), TRAINLEDGER_CA_FILE,
TRAINLEDGER_CERT_FILE and TRAINLEDGER_KEY_FILE (PEM files; any of them implies TLS),
TRAINLEDGER_TLS_SERVER_NAME; TRAINLEDGER_TLS=0 turns it off whatever else is set. `tls=False`
ignores the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

__all__ = [
    "TLS",
    "tls_of",
    "ENV_TLS",
    "ENV_CA_FILE",
    "ENV_CERT_FILE",
    "ENV_KEY_FILE",
    "ENV_SERVER_NAME",
]

ENV_TLS = "TRAINLEDGER_TLS"
ENV_CA_FILE = "TRAINLEDGER_CA_FILE"
ENV_CERT_FILE = "TRAINLEDGER_CERT_FILE"
ENV_KEY_FILE = "TRAINLEDGER_KEY_FILE"
ENV_SERVER_NAME = "TRAINLEDGER_TLS_SERVER_NAME"


def _flag(value: str | None) -> bool | None:
    if value is None or value.strip() == "":
        return None
    return value.strip().lower() not in ("0", "false", "no", "off")


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read the TLS {what} {path}: {error.strerror or error}") from None


@dataclass(frozen=True, slots=True)
class TLS:
    """How a client speaks TLS. `ca_file`: PEM roots to trust ("" = the system's); `cert_file`
    and `key_file`: a client certificate and its key (PEM), for a server that requires mutual
    TLS; `server_name`: the name the server's certificate must carry when it is not the address's
    host (a server reached by IP address, a tunnel)."""

    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    server_name: str = ""

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("a client certificate needs both cert_file and key_file")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> TLS | None:
        """The TLS the environment asks for (see the module docstring), or None for plaintext."""
        env = os.environ if environ is None else environ
        wanted = _flag(env.get(ENV_TLS))
        files = {name: env.get(variable, "") for name, variable in _FILES.items()}
        if wanted is False or (wanted is None and not any(files.values())):
            return None
        return cls(**files, server_name=env.get(ENV_SERVER_NAME, ""))

    def credentials(self) -> grpc.ChannelCredentials:
        """The channel credentials; raises ValueError naming a file that cannot be read."""
        roots = _read(self.ca_file, "CA file") if self.ca_file else None
        if not self.cert_file:
            return grpc.ssl_channel_credentials(root_certificates=roots)
        return grpc.ssl_channel_credentials(
            root_certificates=roots,
            private_key=_read(self.key_file, "key file"),
            certificate_chain=_read(self.cert_file, "certificate file"),
        )

    def options(self) -> tuple[tuple[str, Any], ...]:
        """Channel options: the server name to check, when one is given."""
        return (("grpc.ssl_target_name_override", self.server_name),) if self.server_name else ()


_FILES = {"ca_file": ENV_CA_FILE, "cert_file": ENV_CERT_FILE, "key_file": ENV_KEY_FILE}


def tls_of(tls: bool | TLS | None, environ: Mapping[str, str] | None = None) -> TLS | None:
    """The TLS of a client's `tls` argument: True = system roots, False = plaintext, None = the
    environment's (TLS.from_environment)."""
    if tls is None:
        return TLS.from_environment(environ)
    if tls is True:
        return TLS()
    return tls or None

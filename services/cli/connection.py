"""How a command reaches a server: `--address HOST:PORT` (else TRAINLEDGER_ADDRESS, else
127.0.0.1:50051); its token and TLS settings come from the options `--token-file`, `--tls`,
`--ca-file` or, like every clients.LedgerClient, from the environment (TRAINLEDGER_TOKEN,
TRAINLEDGER_TLS, TRAINLEDGER_CA_FILE, ...). A person is waiting, so a server that does not answer
is tried again for OUTAGE_S only, then is one line on stderr naming the address (exit status 2);
an error the server answers is its message and reason on one line (exit status 1; 3 when it
refuses the token itself), both as `Failure`. What a command does not name it runs as: the
operating-system user is its principal unless a token names one.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from services.cli.output import Failure

if TYPE_CHECKING:
    from clients import LedgerClient

__all__ = ["ADDRESS_DEFAULT", "AUTH_STATUS", "address_of", "connect", "failure_of", "talking"]

ADDRESS_DEFAULT = "127.0.0.1:50051"
# Each call's deadline, and how long a server that does not answer is tried again: a person is
# waiting, so a restart of a second or two is ridden out and nothing longer.
TIMEOUT_S = 10.0
OUTAGE_S = 2.0


# The exit status of a command whose token the server refuses (UNAUTHENTICATED): a script tells a
# credential to replace from a failed run (1) and a server that does not answer (2).
AUTH_STATUS = 3


def address_of(args: argparse.Namespace) -> str:
    """The server a command talks to: --address, else TRAINLEDGER_ADDRESS, else the default."""
    return getattr(args, "address", "") or os.environ.get("TRAINLEDGER_ADDRESS") or ADDRESS_DEFAULT


def connect(args: argparse.Namespace) -> LedgerClient:
    """A client of the server the options name, who runs the command as its principal."""
    from clients import LedgerClient

    token: str | None = None
    if getattr(args, "token_file", ""):
        try:
            with open(args.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError as error:
            raise Failure(f"cannot read the token file {args.token_file}: {error.strerror or error}") from None
        except UnicodeDecodeError:
            token = "\x00"  # Not text: refused just below, naming the file.
        if any(character.isspace() or not character.isprintable() for character in token):
            raise Failure(
                f"the token file {args.token_file} holds more than a token: a bearer token is one word of"
                " printable characters (the first line `trainledger tokens create` prints)"
            )
    try:
        return LedgerClient(
            address_of(args),
            principal=_user(),
            token=token,
            tls=_tls(args),
            timeout_s=TIMEOUT_S,
            outage_budget_s=OUTAGE_S,
        )
    except ValueError as error:  # A TLS file that cannot be read, an address that is not one.
        raise Failure(str(error)) from None


def _tls(args: argparse.Namespace) -> Any:
    """The TLS of the options, each over its environment variable (clients.TLS.from_environment):
    a flag replaces its variable, the others stay. None (plaintext) when neither asks for TLS."""
    from clients import TLS

    given = {name: getattr(args, option, "") for name, (option, _) in _TLS_OPTIONS.items()}
    switch = os.environ.get("TRAINLEDGER_TLS", "").strip().lower()
    off = switch in ("0", "false", "no", "off")  # Off whatever the other variables say.
    environ = {name: "" if off else os.environ.get(variable, "") for name, (_, variable) in _TLS_OPTIONS.items()}
    files = ("ca_file", "cert_file", "key_file")
    wanted = getattr(args, "tls", False) or (switch != "" and not off) or any(environ[n] for n in files)
    if not (wanted or any(given.values())):
        return None
    try:
        return TLS(**{name: given[name] or environ[name] for name in _TLS_OPTIONS})
    except ValueError:
        raise Failure(
            "a client certificate needs both --cert-file and --key-file"
            " (or TRAINLEDGER_CERT_FILE and TRAINLEDGER_KEY_FILE)"
        ) from None


_TLS_OPTIONS = {
    "ca_file": ("ca_file", "TRAINLEDGER_CA_FILE"),
    "cert_file": ("cert_file", "TRAINLEDGER_CERT_FILE"),
    "key_file": ("key_file", "TRAINLEDGER_KEY_FILE"),
    "server_name": ("tls_server_name", "TRAINLEDGER_TLS_SERVER_NAME"),
}


def _user() -> str:
    """Who runs the command, recorded on what it writes when no token says who (a token does)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def failure_of(error: Exception, address: str) -> Failure:
    """The one line a client error is shown as: a server that does not answer names the address
    and the way to read a database file instead (exit status 2); an answered error is its message
    and reason (exit status 1; AUTH_STATUS when the server refuses the token itself: missing,
    invalid, expired or revoked)."""
    from clients import DeadlineExceeded, LedgerClientError, Unauthenticated, Unavailable

    if isinstance(error, Unavailable | DeadlineExceeded) and error.reason in ("", error.code.name):
        message = error.message or error.reason
        for python, flags in _IN_FLAGS:
            message = message.replace(python, flags)
        if "TLS" in message:  # Something answered: the way the client speaks to it is at fault.
            return Failure(f"cannot talk to the ledger at {address} ({message})")
        return Failure(
            f"no ledger answers at {address} ({message});"
            " start one with `trainledger serve`, pass --address HOST:PORT, or read a database file with --db PATH"
        )
    if isinstance(error, LedgerClientError):
        status = AUTH_STATUS if isinstance(error, Unauthenticated) else 1
        return Failure(f"{error.message} ({error.reason})" if error.message else error.reason, status=status)
    return Failure(str(error), status=1)


# The client's hints (clients.transport.explained) name its Python arguments; a command's, its flags.
_IN_FLAGS = (
    ("tls=TLS(cert_file=..., key_file=...)", "--cert-file FILE --key-file FILE"),
    ("tls=TLS(ca_file=...)", "--ca-file FILE"),
    ("TLS(server_name=...)", "--tls-server-name NAME"),
    ("tls=True", "--tls"),
)


@contextmanager
def talking(args: argparse.Namespace) -> Iterator[LedgerClient]:
    """A connected client for the length of a command; client errors become one-line Failures."""
    from clients import LedgerClientError

    client = connect(args)
    try:
        yield client
    except LedgerClientError as error:
        raise failure_of(error, address_of(args)) from None
    finally:
        client.close()

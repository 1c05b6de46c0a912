"""The options commands share, and how a command's handler is chosen: a read command goes through a
server (services.cli.remote, services.cli.registry) unless --db, --database-url or
TRAINLEDGER_DATABASE_URL name a database file (services.cli.local); a write always goes through a
server.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from services.cli.connection import ADDRESS_DEFAULT

__all__ = [
    "DATABASE_DEFAULT",
    "DefaultDatabase",
    "add_reading",
    "add_server_options",
    "add_writing",
    "command_is",
    "database_options",
    "expected_current",
    "positive",
    "read_options",
    "reader",
]

Handler = Callable[[argparse.Namespace], None]


class DefaultDatabase(str):
    """The --db default: a file name that TRAINLEDGER_DATABASE_URL replaces (a --db given does not)."""


DATABASE_DEFAULT = DefaultDatabase("trainledger.db")


def add_server_options(sub: argparse.ArgumentParser, *, json: bool = True) -> None:
    """--address, --token-file, --tls, --ca-file (and --json)."""
    sub.add_argument(
        "--address",
        default="",
        metavar="HOST:PORT",
        help=f"the server (default: TRAINLEDGER_ADDRESS or {ADDRESS_DEFAULT})",
    )
    sub.add_argument(
        "--token-file", default="", metavar="FILE", help="a file holding the bearer token (default: TRAINLEDGER_TOKEN)"
    )
    sub.add_argument("--tls", action="store_true", help="speak TLS (default: TRAINLEDGER_TLS and the files it names)")
    sub.add_argument("--ca-file", default="", metavar="FILE", help="TLS: the CA to trust (PEM; TRAINLEDGER_CA_FILE)")
    sub.add_argument(
        "--cert-file", default="", metavar="FILE", help="mutual TLS: the client certificate (TRAINLEDGER_CERT_FILE)"
    )
    sub.add_argument("--key-file", default="", metavar="FILE", help="mutual TLS: its key (PEM; TRAINLEDGER_KEY_FILE)")
    sub.add_argument(
        "--tls-server-name",
        default="",
        metavar="NAME",
        help="TLS: the name the server's certificate carries (TRAINLEDGER_TLS_SERVER_NAME)",
    )
    if json:
        sub.add_argument("--json", action="store_true", help="machine-readable output")


def database_options(sub: argparse.ArgumentParser, *, read: bool = True) -> None:
    """--db and --database-url of a command on a database (serve, rebuild ...); --json for a read."""
    sub.add_argument("--db", default=DATABASE_DEFAULT, metavar="PATH", help="SQLite file (default: %(default)s)")
    sub.add_argument("--database-url", default="", metavar="URL", help="postgresql:// URL (overrides --db)")
    if read:
        sub.add_argument("--json", action="store_true", help="machine-readable output")


def read_options(sub: argparse.ArgumentParser) -> None:
    """A read command's options: the server's, or a database file's for offline inspection."""
    add_server_options(sub)
    sub.add_argument("--db", default="", metavar="PATH", help="read this SQLite file instead of a server")
    sub.add_argument(
        "--database-url", default="", metavar="URL", help="read this database (postgresql://) instead of a server"
    )
    sub.add_argument("--wide", action="store_true", help="show every value whole (default: fit the terminal)")


def reader(name: str, through_server: Handler) -> Handler:
    """A read command's handler: `through_server`, or on the database that --db, --database-url or
    TRAINLEDGER_DATABASE_URL names, the handler of the same name in services.cli.local."""

    def read(args: argparse.Namespace) -> None:
        if args.database:
            from services.cli import local

            getattr(local, name)(args)
        else:
            through_server(args)

    read.__name__ = name
    return read


def add_reading(group: Any, name: str, through_server: Handler, help: str) -> argparse.ArgumentParser:
    """A read command `name` under `group` (an add_subparsers): read_options, `reader` of the handler."""
    sub: argparse.ArgumentParser = group.add_parser(name, help=help)
    read_options(sub)
    sub.set_defaults(handler=reader(through_server.__name__, through_server))
    return sub


def add_writing(group: Any, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
    """A write command `name` under `group` (an add_subparsers): the server's options, `handler`."""
    sub: argparse.ArgumentParser = group.add_parser(name, help=help)
    add_server_options(sub)
    sub.set_defaults(handler=handler)
    return sub


def command_is(asked: str | None, name: str) -> bool:
    """Whether the parser for `name` is built whole: it is the command asked for, or all are."""
    return asked is None or asked == name


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def expected_current(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--expected-current",
        type=int,
        default=None,
        metavar="VERSION",
        help="refuse unless this version is current (compare-and-set; 0: none; default: the current one as read now)",
    )

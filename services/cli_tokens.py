"""`trainledger tokens`: issue, list and revoke bearer tokens on the database itself (no server),
the way `createuser` works on PostgreSQL, so the first admin token needs no secret in a file.

    trainledger tokens create --principal NAME --role ROLE [--account ACCOUNT] [--expires 90d]
    trainledger tokens list [--json]
    trainledger tokens revoke TOKEN_ID [--reason TEXT]

`create` prints the bearer token once (only its hash is stored). Issuing and revoking are events
in the log, recorded with the principal `local:<operating system user>`. A revocation is refused
by every server on the database within about a second (services.auth.CACHE_S).
"""

from __future__ import annotations

import argparse
import getpass
import os
import uuid
from typing import Any

from ledger import Ledger
from ledger.application.kernel import utc_now
from ledger.backend import is_postgres_url
from ledger.domain.errors import LedgerError
from ledger.domain.tokens import ROLES, Token, parse_expiry
from services.reports import DATABASE_DEFAULT, Failure, emit, opened
from services.tables import table

__all__ = ["add_parser", "create", "listing", "revoke"]


def _who() -> dict[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return {"principal": f"local:{user}", "request_id": str(uuid.uuid4())}


def _when(moment: Any) -> str:
    return "-" if moment is None else moment.isoformat(timespec="seconds")


def _row(token: Token) -> dict[str, Any]:
    return {
        "token_id": token.token_id,
        "principal": token.holder,
        "role": token.role,
        "account": token.account,
        "expires_at": _when(token.expires_at),
        "issued_by": token.issued_by,
        "issued_at": _when(token.issued_at),
        "revoked_at": _when(token.revoked_at),
        "revoked_by": token.revoked_by,
    }


def create(args: argparse.Namespace) -> None:
    """Issue a token and print its bearer value (once)."""
    try:
        expires_at = parse_expiry(args.expires, utc_now()) if args.expires else None
    except LedgerError as error:
        raise Failure(error.message) from None
    if not is_postgres_url(args.database) and not os.path.exists(args.database):
        # The first admin token may come before the first `serve`: it makes the database.
        Ledger.open(args.database, project=False).close()
    with opened(args.database, catch_up=False) as ledger:
        issued = ledger.issue_token(
            holder=args.principal, role=args.role, account=args.account, expires_at=expires_at, **_who()
        )
    if args.json:
        emit(args, {**_row(issued.token), "bearer": issued.bearer}, "")
        return
    scope = f" on account {args.account}" if args.account else ""
    expiry = "never" if expires_at is None else _when(expires_at)
    print(issued.bearer)
    print(
        f"token {issued.token.token_id}: {args.principal} as {args.role}{scope}, expires {expiry}"
        " (shown once: store it now)",
        flush=True,
    )


def listing(args: argparse.Namespace) -> None:
    """Every token, issued first, with its state (never a secret)."""
    with opened(args.database, catch_up=False) as ledger:
        tokens = sorted(ledger.token_book().values(), key=lambda token: token.issued_at)
    rows = [_row(token) for token in tokens]
    columns = ["token_id", "principal", "role", "account", "expires_at", "revoked_at"]
    emit(args, rows, table(columns, [[row[name] for name in columns] for row in rows]))


def revoke(args: argparse.Namespace) -> None:
    with opened(args.database, catch_up=False) as ledger:
        receipt = ledger.revoke_token(token_id=args.token_id, reason=args.reason, **_who())
    print(f"token {args.token_id} {'was already revoked' if receipt.duplicate else 'revoked'}")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `tokens` to the CLI's subcommands (the `add_subparsers` of services.cli.parser)."""
    tokens: argparse.ArgumentParser = commands.add_parser("tokens", help="bearer tokens: create, list, revoke")
    actions = tokens.add_subparsers(dest="action", required=True)

    def action(name: str, handler: Any, help: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help)
        sub.add_argument("--db", default=DATABASE_DEFAULT, metavar="PATH", help="SQLite file (default: %(default)s)")
        sub.add_argument("--database-url", default="", metavar="URL", help="postgresql:// URL (overrides --db)")
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        sub.set_defaults(handler=handler)
        return sub

    made = action("create", create, "issue a token and print it once")
    made.add_argument("--principal", required=True, help="who the token names (recorded on every event it writes)")
    made.add_argument("--role", required=True, choices=ROLES)
    made.add_argument("--account", default="", help="scope: this account, its children and their runs")
    made.add_argument("--expires", default="", metavar="DURATION", help="e.g. 90d, 12h, 30m (default: never)")
    action("list", listing, "list tokens (never their secrets)")
    revoked = action("revoke", revoke, "revoke a token")
    revoked.add_argument("token_id", metavar="TOKEN_ID")
    revoked.add_argument("--reason", default="", help="why (recorded)")
    return tokens

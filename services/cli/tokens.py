"""`trainledger tokens`: issue, list and revoke bearer tokens on the database itself (no server),
the way `createuser` works on PostgreSQL, so the first admin token needs no secret in a file.

    trainledger tokens create --principal NAME --role ROLE [--account ACCOUNT] [--expires 90d]
    trainledger tokens list [--json]
    trainledger tokens revoke TOKEN_ID [--reason TEXT]   # or the whole token: its id is taken

`create` prints the bearer token once (only its hash is stored). Issuing and revoking are events
in the log, recorded with the principal `local:<operating system user>`. A revocation is refused
by every server on the database within about a second (services.runtime.auth.CACHE_S).
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import sys
import uuid
from typing import Any

from ledger import Ledger
from ledger.application.outcomes import utc_now
from ledger.backend import is_postgres_url
from ledger.domain.errors import LedgerError
from ledger.domain.tokens import ROLES, Token, parse_bearer, parse_expiry
from services.cli.local import opened
from services.cli.options import database_options
from services.cli.output import Failure, emit
from services.render.tables import table

__all__ = ["add_parser", "create", "listing", "revoke"]

# A token id as `tokens list` shows it (ledger.domain.tokens: the part of a bearer token before its secret).
ID_FORM = re.compile(r"[A-Za-z0-9]{8,64}")


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
        file=sys.stderr,  # stdout is the token alone: `tokens create ... > token.txt`.
        flush=True,
    )


def listing(args: argparse.Namespace) -> None:
    """Every token, issued first, with its state (never a secret)."""
    with opened(args.database, catch_up=False) as ledger:
        tokens = sorted(ledger.token_book().values(), key=lambda token: token.issued_at)
    rows = [_row(token) for token in tokens]
    columns = ["token_id", "principal", "role", "account", "expires_at", "revoked_at"]
    emit(args, rows, table(columns, [[row[name] for name in columns] for row in rows]))


def _token_id(given: str) -> str:
    """The token id `tokens revoke` was given: the id itself, or the id of a whole bearer token
    (its secret is never printed). Anything else is refused without being echoed."""
    if ID_FORM.fullmatch(given):
        return given
    try:
        return parse_bearer(given)[0]
    except LedgerError:
        raise Failure(
            "TOKEN_ID is the id `trainledger tokens list` shows (8 to 64 letters and digits), or the whole token",
            status=2,
        ) from None


def revoke(args: argparse.Namespace) -> None:
    token_id = _token_id(args.token_id)
    with opened(args.database, catch_up=False) as ledger:
        receipt = ledger.revoke_token(token_id=token_id, reason=args.reason, **_who())
    print(f"token {token_id} {'was already revoked' if receipt.duplicate else 'revoked'}")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `tokens` to the CLI's subcommands (the `add_subparsers` of services.cli.commands.parser)."""
    tokens: argparse.ArgumentParser = commands.add_parser("tokens", help="bearer tokens: create, list, revoke")
    actions = tokens.add_subparsers(dest="action", required=True)

    def action(name: str, handler: Any, help: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help)
        database_options(sub)
        sub.set_defaults(handler=handler)
        return sub

    made = action("create", create, "issue a token and print it once")
    made.add_argument("--principal", required=True, help="who the token names (recorded on every event it writes)")
    made.add_argument("--role", required=True, choices=ROLES)
    made.add_argument("--account", default="", help="scope: this account, its children and their runs")
    made.add_argument("--expires", default="", metavar="DURATION", help="e.g. 90d, 12h, 30m (default: never)")
    action("list", listing, "list tokens (never their secrets)")
    revoked = action("revoke", revoke, "revoke a token")
    revoked.add_argument(
        "token_id", metavar="TOKEN_ID", help="the id `tokens list` shows, or the whole token (never printed)"
    )
    revoked.add_argument("--reason", default="", help="why (recorded)")
    return tokens

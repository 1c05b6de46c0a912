"""`trainledger seal`: seal a log that has no seals, on the database itself (no server).

    trainledger seal --reason TEXT [--db PATH | --database-url URL]

A log holds no seals when it was written before the chain existed, or when its seals were deleted.
Sealing covers it as it stands, edits included, so it is an admin's decision, never a side effect
of opening, serving, rebuilding or verifying a ledger: it is recorded in the log (LogSealed, with
the principal `local:<operating system user>` and the reason). A log that has seals is refused
(exit 1: verify it instead; a broken chain is evidence, not something to seal over). Like
`rebuild`, it takes the SQLite file's `<file>.lock` and is refused, naming the holder,
while a server holds it (exit 2, as rebuild).
"""

from __future__ import annotations

import argparse
import getpass
import os
import uuid
from contextlib import nullcontext
from typing import Any

from services.cli.local import opened
from services.cli.options import database_options
from services.cli.output import Failure
from services.runtime.holder import HolderError, held

__all__ = ["add_parser", "seal"]


def seal(args: argparse.Namespace) -> None:
    """Seal the log and print the head the chain now reaches."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    try:
        # The lock `serve` and `rebuild` take on a SQLite file: never under a running server.
        missing = "://" not in args.database and not os.path.exists(args.database)  # opened() reports it.
        lock = nullcontext() if missing else held(args.database, "seal")
        with lock, opened(args.database, catch_up=False) as ledger:
            receipt = ledger.seal_log(reason=args.reason, principal=f"local:{user}", request_id=str(uuid.uuid4()))
            head = ledger.chain_head()
    except HolderError as error:
        raise Failure(str(error)) from None
    print(f"sealed: recorded at {receipt.position}; the chain's head is {head.position}:{head.digest}")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `seal` to the CLI's subcommands (the `add_subparsers` of services.cli.commands.parser)."""
    sub: argparse.ArgumentParser = commands.add_parser(
        "seal", help="seal a log that has no seals, as it stands (recorded with who and why)"
    )
    database_options(sub, read=False)
    sub.add_argument("--reason", required=True, help="why the log is sealed as it stands (recorded)")
    sub.set_defaults(handler=seal)
    return sub

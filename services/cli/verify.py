"""`trainledger verify`: the hash chain over the log recomputed from position 1, on the database
itself (no server), like the other read commands.

    trainledger verify [--db PATH | --database-url URL] [--expect-head POSITION:DIGEST] [--no-views] [--json]

Prints OK with the head (position and digest: what an auditor writes down) and exits 0, or the
first position where the log breaks with the problem and exits 1; a usage error exits 2. It never
writes (the database is opened read-only): on a file that a server holds it reads the log and the
views as the server committed them, and a log without seals is reported, never sealed
(services.cli.seal does that, on an admin's word).
"""

from __future__ import annotations

import argparse
from typing import Any

from ledger.views import models
from services.cli.local import opened
from services.cli.options import database_options
from services.cli.output import Failure, emit
from services.render.tables import fields

__all__ = ["add_parser", "verify", "head_argument"]

DIGEST_HEX_CHARS = 64
_HEX = frozenset("0123456789abcdef")


def head_argument(text: str) -> models.ChainHead:
    """POSITION:DIGEST as a ChainHead (the digest in lowercase hex); argparse's usage error otherwise."""
    position, _, digest = text.partition(":")
    digest = digest.lower()
    if not position.isdigit() or int(position) < 1 or len(digest) != DIGEST_HEX_CHARS or not _HEX.issuperset(digest):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not POSITION:DIGEST (a position from 1 and {DIGEST_HEX_CHARS} hex characters)"
        )
    return models.ChainHead(position=int(position), digest=digest)


def report(outcome: models.Verification) -> str:
    """The outcome in lines: OK with the head, or where and how the log breaks."""
    head = f"{outcome.head.position}:{outcome.head.digest}"
    if outcome.ok:
        return f"OK: {outcome.checked} events verified, head {head}"
    return "\n".join(
        [
            f"BROKEN at position {outcome.broken_at}: {outcome.problem}",
            fields([("detail", outcome.detail or None), ("checked", outcome.checked), ("head", head)]),
        ]
    )


def verify(args: argparse.Namespace) -> None:
    """Verify the database; a log that does not verify is exit status 1 (Failure)."""
    with opened(args.database, catch_up=False, read_only=True) as ledger:
        outcome = ledger.verify(args.expect_head, views=args.views)
    emit(args, outcome, report(outcome))
    if not outcome.ok:
        raise Failure(f"the log does not verify: {outcome.problem} at position {outcome.broken_at}", status=1)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `verify` to the CLI's subcommands (the `add_subparsers` of services.cli.commands.parser)."""
    sub: argparse.ArgumentParser = commands.add_parser(
        "verify", help="recompute the hash chain over the log and check the snapshots and views"
    )
    database_options(sub)
    sub.add_argument(
        "--expect-head",
        type=head_argument,
        default=None,
        metavar="POSITION:DIGEST",
        help="a head written down earlier: the chain must reach it with the same digest",
    )
    sub.add_argument("--no-views", dest="views", action="store_false", help="check the chain only")
    sub.set_defaults(handler=verify)
    return sub

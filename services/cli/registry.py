"""`trainledger registry alias` and `registry retire`: the registry writes beside promote and
rollback (services.cli.commands), through a server like them.

    trainledger registry alias FAMILY ALIAS VERSION [--expect N]   # VERSION 0 removes the alias
    trainledger registry retire FAMILY --reason TEXT

An alias moves by compare-and-set on the version it names now (--expect; by default the one read
just before, 0 for none); a retired family takes no more registrations, promotions, rollbacks or
alias moves, and still reads.
"""

from __future__ import annotations

import argparse
from typing import Any

from services import render
from services.cli.remote import add_server_options, talking
from services.render.tables import to_json

__all__ = ["add_parsers", "registry_alias", "registry_retire"]


def add_parsers(registry: Any) -> None:
    """Register `alias` and `retire` under `trainledger registry`."""
    aliased = registry.add_parser("alias", help="point an alias (staging, production ...) at a version")
    aliased.add_argument("family", metavar="FAMILY")
    aliased.add_argument("alias", metavar="ALIAS", help="a lowercase letter, then letters, digits, - or _")
    aliased.add_argument("version", metavar="VERSION", type=int, help="the version it names (0: remove it)")
    aliased.add_argument(
        "--expect",
        type=int,
        default=None,
        metavar="N",
        help="refuse unless the alias names version N now (compare-and-set; 0: none; default: as read now)",
    )
    add_server_options(aliased)
    aliased.set_defaults(handler=registry_alias)
    retired = registry.add_parser("retire", help="retire a family: no further promotions; reads still work")
    retired.add_argument("family", metavar="FAMILY")
    retired.add_argument("--reason", required=True, help="why (recorded; retiring again takes the same reason)")
    add_server_options(retired)
    retired.set_defaults(handler=registry_retire)


def _emit(args: argparse.Namespace, value: Any, text: str) -> None:
    print(to_json(value) if args.json else text)


def registry_alias(args: argparse.Namespace) -> None:
    with talking(args) as client:
        expected = args.expect
        if expected is None:
            page = client.list_versions(family=args.family, page_size=1)
            expected = next((a.version for a in page.aliases if a.alias == args.alias), 0)
        receipt = client.move_alias(
            family=args.family, alias=args.alias, version=args.version, expected_version=expected
        )
    text = render.alias_text(
        args.family, args.alias, receipt.version, receipt.previous, receipt.position, receipt.duplicate
    )
    _emit(args, receipt, text)


def registry_retire(args: argparse.Namespace) -> None:
    with talking(args) as client:
        receipt = client.retire_family(family=args.family, reason=args.reason)
    _emit(args, receipt, render.retire_text(args.family, receipt.position, receipt.duplicate))

"""`trainledger watch RUN`: a live terminal view of a run, through the server."""

from __future__ import annotations

import argparse
from typing import Any

from services.reports import Failure

__all__ = ["add_parser"]


def watch(args: argparse.Namespace) -> None:
    raise Failure("watch is not available yet")


def add_parser(commands: Any) -> None:
    sub = commands.add_parser("watch", help="a live view of a run in the terminal, until it finishes")
    sub.add_argument("run", metavar="RUN", help="run id, unique id prefix or name")
    sub.set_defaults(handler=watch)

"""What every command ends with: its result on stdout (`emit`: a table for people, or JSON with
--json), or a problem in one line on stderr with an exit status (`Failure`, which
services.cli.commands.main prints)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from services.render.tables import to_json

__all__ = ["Failure", "emit"]


class Failure(Exception):
    """A problem to report in one line, with the exit status to end with."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def emit(args: argparse.Namespace, value: Any, text: str | Callable[[], str]) -> None:
    """`value` as JSON with --json, else `text` (made only when it is printed, when a callable)."""
    print(to_json(value) if args.json else (text if isinstance(text, str) else text()))

"""How a database is named in messages: the server's, the workers' and the CLI's read commands."""

from __future__ import annotations

import re

__all__ = ["describe"]


def describe(database: str) -> str:
    """A database for messages, with any password in a URL hidden."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", database)

"""The base of every typed result of the client (Model) and the default factories their list and
dict fields share. Each proto file's results live in a module of their own beside it (common, runs,
spend, registry, events); clients.models gathers them.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

__all__ = ["Model", "empty_list", "empty_dict"]


def empty_list() -> list[Any]:
    """A new empty list: the default of a result's list field."""
    return []


def empty_dict() -> dict[str, Any]:
    """A new empty dict: the default of a result's dict field."""
    return {}


class Model(msgspec.Struct, frozen=True, kw_only=True):
    """The base of every result: immutable, compared by value, `.to_dict()` for JSON."""

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready builtins: nested results as dicts, datetimes as strings."""
        return cast(dict[str, Any], msgspec.to_builtins(self))

"""How the views' handlers are typed and applied: a handler changes one view for one event, in the
projector's transaction; a gathered one (`Gathered`) collects a chunk's events and writes them
once at its end. `apply_events` runs a view's handlers over a chunk (the projector and the
scratch rebuild of ledger.views.scratch both use it), `prepare` computes a gathered handler's rows
before the transaction.

Account, family and provider events carry the aggregate id, not the name: the Opened/Created
handlers record the name in view_names (`Names`, each projector has its own, keeps those names in
memory for the events that follow); `naming`, `providing` and `named` wrap a view's handlers to
record or look up that name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Protocol

import msgspec

from ledger.views.store import Table, ViewCursor

__all__ = [
    "NAMES_TABLES",
    "Gathered",
    "Handler",
    "NamedHandler",
    "Names",
    "ViewHandlers",
    "apply_events",
    "both",
    "dump",
    "ignore",
    "named",
    "naming",
    "prepare",
    "providing",
    "to_epoch",
]

#: view_names maps account, family and provider aggregate ids to their names: any view may add to
#: it, none owns it (so only a rebuild of every view drops it).
NAMES_TABLES = {"view_names": Table({"id": str, "name": str}, ("id",), [], "")}

_json = msgspec.json.Encoder()

Handler = Callable[[ViewCursor, Any, int], None]
#: A handler of an event of a named aggregate, given the aggregate's name (see `named`).
NamedHandler = Callable[[ViewCursor, Any, int, str], None]


def to_epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def dump(value: Any) -> str:
    """`value` as the JSON text a view column stores."""
    return _json.encode(value).decode()


class Gathered(Protocol):
    """A handler that gathers the events of a chunk (`add`) and writes them once, at the end of the
    chunk (`flush`, in the chunk's transaction). Only a view whose rows no other handler of the
    view reads or writes may have one (its writes come after the view's other handlers')."""

    gathered: bool

    def add(self, event: Any, position: int) -> None: ...

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows of everything added since the last call, and forget it (no storage read)."""
        ...

    def write(self, cursor: ViewCursor, rows: list[tuple[Any, ...]]) -> None: ...

    def clear(self) -> None: ...


#: One view's handler of each event class it projects.
ViewHandlers = dict[type, Handler | Gathered]


class Names:
    """Account and family names by aggregate id, read from view_names once and kept in memory
    (by the id itself: its text form is made only to write or read view_names)."""

    def __init__(self) -> None:
        self._cached: dict[Any, str] = {}

    def remember(self, c: ViewCursor, originator_id: Any, name: str) -> None:
        c.execute(
            "INSERT INTO view_names (id, name) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", (str(originator_id), name)
        )
        self._cached[originator_id] = name

    def lookup(self, c: ViewCursor, originator_id: Any) -> str:
        name = self._cached.get(originator_id)
        if name is None:
            key = str(originator_id)
            c.execute("SELECT name FROM view_names WHERE id = ?", (key,))
            row = c.fetchone()
            if row is None:
                raise LookupError(f"no name recorded for aggregate {key}")
            name = self._cached[originator_id] = row[0]
        return name


def ignore(c: ViewCursor, e: Any, position: int) -> None:
    """Nothing to change (the event only names its aggregate)."""


def both(first: Handler, then: Handler) -> Handler:
    """One handler that runs `first`, then `then`."""

    def run_both(c: ViewCursor, e: Any, position: int) -> None:
        first(c, e, position)
        then(c, e, position)

    return run_both


def named(names: Names, handler: NamedHandler) -> Handler:
    """`handler`, given the name of the event's aggregate (recorded when it was opened)."""
    return lambda c, e, position: handler(c, e, position, names.lookup(c, e.originator_id))


def naming(names: Names, handler: Handler = ignore) -> Handler:
    """`handler`, after recording the event's `name` as its aggregate's (Opened, Created)."""

    def first(c: ViewCursor, e: Any, position: int) -> None:
        names.remember(c, e.originator_id, e.name)
        handler(c, e, position)

    return first


def providing(names: Names, handler: Handler) -> Handler:
    """`handler`, after recording the event's `provider` as its aggregate's name (a bill's)."""

    def first(c: ViewCursor, e: Any, position: int) -> None:
        names.remember(c, e.originator_id, e.provider)
        handler(c, e, position)

    return first


def apply_events(
    cursor: ViewCursor,
    view_handlers: ViewHandlers,
    events: Iterable[tuple[int, Any]],
    prepared: dict[int, list[tuple[Any, ...]]] | None = None,
) -> None:
    """Apply (position, event) pairs to one view inside the caller's transaction; gathered
    handlers write once, after the rest. `prepared` holds, by id of a gathered handler, the rows
    it already made of these same events (`prepare`, before the transaction): it only writes them."""
    gathering: list[Gathered] = []
    try:
        for position, event in events:
            handler = view_handlers.get(type(event))
            if handler is None:
                continue
            if getattr(handler, "gathered", False):
                gathered: Gathered = handler  # type: ignore[assignment]
                if prepared is None or id(gathered) not in prepared:
                    gathered.add(event, position)
                if gathered not in gathering:
                    gathering.append(gathered)
            else:
                handler(cursor, event, position)  # type: ignore[operator]
        for gathered in gathering:
            rows = prepared.get(id(gathered)) if prepared is not None else None
            gathered.write(cursor, gathered.rows() if rows is None else rows)
    finally:
        for gathered in gathering:
            gathered.clear()


def prepare(view_handlers: ViewHandlers, events: Iterable[tuple[int, Any]]) -> dict[int, list[Any]]:
    """The rows each gathered handler of one view makes of `events`, computed without storage (so
    outside the transaction that writes them: `apply_events(..., prepared=...)`)."""
    gathering: list[Gathered] = []
    try:
        for position, event in events:
            handler = view_handlers.get(type(event))
            if getattr(handler, "gathered", False):
                gathered: Gathered = handler  # type: ignore[assignment]
                gathered.add(event, position)
                if gathered not in gathering:
                    gathering.append(gathered)
        return {id(gathered): gathered.rows() for gathered in gathering}
    finally:
        for gathered in gathering:
            gathered.clear()

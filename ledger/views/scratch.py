"""The views rebuilt from the log into a scratch SQLite database, to compare with the live views.

`ScratchViews` projects the log with the same handlers as the live projector (ledger.views.handlers),
each view up to a position of its own (the live view's tracking position), and can be moved forward
later; `first_difference` compares it table by table with the live views, read as of one moment
(Storage.view_read), and names the first row that differs. The scratch database is SQLite's private
temporary database: it lives in memory and spills to a temporary file when it grows large.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from ledger.views.handlers import handlers
from ledger.views.handling import Names, apply_events
from ledger.views.schema import TABLES, VIEWS

__all__ = ["Difference", "ScratchViews", "first_difference", "ordered_select"]

SQLITE_TYPES = {int: int, float: float, str: str, bytes: bytes}
SCRATCH_CHUNK_EVENTS = 500


class Difference(NamedTuple):
    """The first row in which a live view table differs from its rebuild: the table, the row's
    primary key, the log position the row records (0 when its table records none) and what differs."""

    table: str
    key: tuple[Any, ...]
    position: int
    detail: str


def ordered_select(table: str, collate: str = "") -> str:
    """A SELECT of a view table's columns (in TABLES' order) sorted by its primary key, its text
    columns with `collate` (a database's clause for byte order; SQLite sorts text so already)."""
    columns, primary_key, *_ = TABLES[table]
    order = ", ".join(name + (collate if columns[name] is str else "") for name in primary_key)
    return f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"


class ScratchViews:
    """The views projected from the log into a scratch database. `decode` turns a page of the log
    (`select(start, limit, stop)`) into (position, event) pairs."""

    def __init__(
        self,
        select: Callable[[int, int, int], Sequence[Any]],
        decode: Callable[[Any], Any],
    ) -> None:
        self._select = select
        self._decode = decode
        import sqlite_utils  # Here, not at import: it loads pandas and numpy when they are installed.

        self.connection = sqlite3.connect("", isolation_level=None)
        db = sqlite_utils.Database(self.connection)
        for table, (columns, primary_key, _, _) in TABLES.items():
            db.table(table).create({name: SQLITE_TYPES[kind] for name, kind in columns.items()}, pk=primary_key)
        self.positions = dict.fromkeys(VIEWS, 0)
        self._handlers = handlers(Names())

    def project(self, targets: dict[str, int], between: Callable[[], None] | None = None) -> None:
        """Move each view forward to its position in `targets` (views already there stay);
        `between` is called before each chunk (it may raise to end the projection early)."""
        start = min(self.positions[view] for view in VIEWS) + 1
        stop = max(targets.get(view, 0) for view in VIEWS)
        cursor = self.connection.cursor()
        while start <= stop:
            if between is not None:
                between()
            notifications = self._select(start, SCRATCH_CHUNK_EVENTS, stop)
            if not notifications:
                break
            events = [(notification.id, self._decode(notification)) for notification in notifications]
            cursor.execute("BEGIN")
            for view in VIEWS:
                seen, target = self.positions[view], targets.get(view, 0)
                apply_events(cursor, self._handlers[view], ((p, e) for p, e in events if seen < p <= target))
            cursor.execute("COMMIT")
            start = events[-1][0] + 1
        for view in VIEWS:
            self.positions[view] = max(self.positions[view], targets.get(view, 0))

    def rows(self, table: str) -> Iterator[tuple[Any, ...]]:
        return iter(self.connection.execute(ordered_select(table)))

    def close(self) -> None:
        self.connection.close()


def _normal(row: Iterable[Any]) -> tuple[Any, ...]:
    """A row as both backends give it: bytes, never memoryview; text without NUL (PostgreSQL keeps
    NUL out of text, see ledger.storage.postgres.sql.clean)."""
    return tuple(
        bytes(value)
        if isinstance(value, memoryview)
        else value.replace("\x00", "\ufffd")
        if type(value) is str and "\x00" in value
        else value
        for value in row
    )


def first_difference(
    scratch: ScratchViews, live: Callable[[str], Iterable[Any]], views: Collection[str] | None = None
) -> Difference | None:
    """The first row, table by table in TABLES' order, where `live(table)` (the live rows sorted by
    primary key, text in byte order) differs from the rebuild; None when every table agrees. With
    `views` (those the live database has built), the tables of the other views (a view newer than
    the ledger's last writable open, which makes its tables and projects it) are not compared."""
    for table, (columns, primary_key, _, owner) in TABLES.items():
        if views is not None and owner and owner not in views:
            continue
        names = list(columns)
        key_at = [names.index(name) for name in primary_key]
        rebuilt_rows, live_rows = scratch.rows(table), iter(live(table))
        rebuilt, found = next(rebuilt_rows, None), next(live_rows, None)
        while rebuilt is not None or found is not None:
            rebuilt = None if rebuilt is None else _normal(rebuilt)
            found = None if found is None else _normal(found)
            rebuilt_key = None if rebuilt is None else tuple(rebuilt[i] for i in key_at)
            found_key = None if found is None else tuple(found[i] for i in key_at)
            if rebuilt_key == found_key and rebuilt == found:
                rebuilt, found = next(rebuilt_rows, None), next(live_rows, None)
                continue
            if found_key is None or (rebuilt_key is not None and rebuilt_key < found_key):
                found = None  # The live table lacks the rebuilt row.
            elif rebuilt_key is None or found_key < rebuilt_key:
                rebuilt = None  # The live table has a row the rebuild has not.
            row = found if found is not None else rebuilt
            assert row is not None
            position = int(row[names.index("position")] or 0) if "position" in columns else 0
            if position == 0:
                position = scratch.positions[owner] if owner else max(scratch.positions.values())
            key = tuple(row[i] for i in key_at)
            return Difference(table, key, position, _describe(table, names, key, rebuilt, found))
    return None


# A view cell may hold a whole column of a step batch (megabytes): a difference quotes at most this
# much of each value, and names at most DIFFERENCES_SHOWN columns, so the answer stays small.
VALUE_SHOWN_MAX = 96
DIFFERENCES_SHOWN = 4


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_SHOWN_MAX else text[: VALUE_SHOWN_MAX - 1] + "\u2026"


def _describe(
    table: str, names: list[str], key: tuple[Any, ...], rebuilt: tuple[Any, ...] | None, found: tuple[Any, ...] | None
) -> str:
    row = "(" + ", ".join(_shown(part) for part in key) + ")"
    if found is None:
        return f"{table} lacks the row {row} that a rebuild from the log has"
    if rebuilt is None:
        return f"{table} has a row {row} that a rebuild from the log has not"
    changed = [
        f"{name} is {_shown(have)} where a rebuild has {_shown(want)}"
        for name, have, want in zip(names, found, rebuilt, strict=True)
        if have != want
    ]
    more = len(changed) - DIFFERENCES_SHOWN
    shown = "; ".join(changed[:DIFFERENCES_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return f"{table}, row {row}: {shown}"

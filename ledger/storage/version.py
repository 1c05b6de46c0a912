"""The stored schema's version: a small metadata table, `ledger_schema` (name, value), beside the
events and the views, on SQLite and on PostgreSQL.

SCHEMA_VERSION is the layout this code writes and reads: the events' tables, the seals, the keys
index, the views and the topics events are stored under (older topics keep resolving through
ledger.domain.topics' legacy table). A ledger opened for the first time by a version that keeps
this table gets it (a ledger from before the table is version 1, the first layout it describes);
a ledger whose stored version is older is moved up to SCHEMA_VERSION once whatever upgrade that
takes has run; a ledger written by a newer schema is refused before anything is written to it,
with a message that names both versions and the release that wrote it: an older release could
misread what a newer one stored, or write what the newer one cannot read.

Every release that changes the layout raises SCHEMA_VERSION and checks in a ledger it wrote
(tests/data/<release>/, made by scripts/make_upgrade_corpus.py) that the tests open.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

__all__ = [
    "SCHEMA_VERSION",
    "SchemaTooNew",
    "SchemaUnreadable",
    "package_version",
    "check_schema",
    "check_file_schema",
    "VIEW_LAYOUTS",
    "rebuild_stale_views",
    "schema_rows",
    "write_schema_row",
]

T = TypeVar("T")

SCHEMA_VERSION = 1
#: The layout of each view whose stored rows changed meaning since the view was first written
#: (a row `view:NAME` records the layout a ledger's rows are in). Views are built from the log, so
#: a stale one is dropped and rebuilt at open rather than moved up by SCHEMA_VERSION:
#: - search 2: an odd key spelled as a query names it (``spec.`a.b` ``), apart from a nested one.
VIEW_LAYOUTS = {"search": "2"}
TABLE = "ledger_schema"
CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
READ = f"SELECT name, value FROM {TABLE}"
EXISTS_SQLITE = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"
EXISTS_POSTGRES = f"SELECT to_regclass('{TABLE}') IS NOT NULL"
VERSION_FORMAT = re.compile(r"[1-9][0-9]{0,63}")  # What a release writes: a positive integer.
SHOWN_CHARS_MAX = 64
WRITE = f"INSERT INTO {TABLE} (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"


class SchemaTooNew(Exception):
    """The ledger was written by a newer schema than this code reads."""


class SchemaUnreadable(Exception):
    """The ledger's stored schema version is no version (edited or damaged): nothing can tell
    which layout it holds."""


def package_version() -> str:
    """The installed trainledger's version ("unknown" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trainledger")
    except PackageNotFoundError:
        return "unknown"


def schema_rows(storage: Any) -> dict[str, str]:
    """The table's rows (name: value), creating the table when it is missing."""
    return _on(storage, _rows)


def write_schema_row(storage: Any, name: str, value: str) -> None:
    """Set one row of the table (what a release records about the layout it wrote)."""

    def write(execute: Execute) -> None:
        _rows(execute)  # The table, made when missing.
        execute(WRITE, (name, value))

    _on(storage, write)


def check_schema(storage: Any, *, write: bool = True) -> int:
    """Refuse a ledger written by a newer schema (SchemaTooNew) or whose version is no version
    (SchemaUnreadable); record SCHEMA_VERSION on an older one or one without the table, unless
    not `write` (a ledger opened to check it: nothing is written, no table made). Returns the
    version the ledger had."""
    postgres = getattr(storage, "run", None) is not None
    decide = _decide if write else functools.partial(_decide_reading, postgres=postgres)
    try:
        return _on(storage, decide)
    except (SchemaTooNew, SchemaUnreadable):
        raise
    except Exception:
        if not write:
            raise
        # Two processes creating the table at once on PostgreSQL: the second one's CREATE fails
        # on the catalogue's unique index; the table is there now.
        return _on(storage, decide)


def rebuild_stale_views(storage: Any) -> tuple[str, ...]:
    """Drop the views whose rows are in an older layout than VIEW_LAYOUTS names (the projector
    builds them again from the log, as it builds a view a ledger never had) and record the layout
    now in force. Answers the views dropped: a view that has projected nothing yet (a new ledger)
    is only marked."""
    rows = schema_rows(storage)
    stale = tuple(view for view, layout in VIEW_LAYOUTS.items() if rows.get(f"view:{view}") != layout)
    if not stale:
        return ()
    projected = storage.tracking_positions()
    dropped = tuple(view for view in stale if projected.get(view, 0) > 0)
    if dropped:
        storage.drop(dropped)
    for view in stale:
        write_schema_row(storage, f"view:{view}", VIEW_LAYOUTS[view])
    return dropped


def check_file_schema(path: str) -> None:
    """Refuse a SQLite ledger from a newer schema (SchemaTooNew) or whose version is no version
    (SchemaUnreadable) before anything opens it to write: a newer layout may lack a table this
    code would make. Reads the file read-only; a file without the table, or none, passes."""
    if not os.path.isfile(path):
        return
    try:
        uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as connection:
            if connection.execute(EXISTS_SQLITE).fetchone() is None:
                return
            rows = {str(name): str(value) for name, value in connection.execute(READ).fetchall()}
    except sqlite3.Error:
        return  # Not a ledger, damaged or locked: the open that follows says so.
    _version_of(rows)


Execute = Callable[..., Any]


def _on(storage: Any, work: Callable[[Execute], T]) -> T:
    """`work` in one transaction: on SQLite the storage's writer, on PostgreSQL a pooled
    connection of its own (outside the views' pipeline mode)."""
    run = getattr(storage, "run", None)
    if run is None:
        with storage.transaction() as cursor:
            return work(lambda sql, params=(): cursor.execute(sql, params))

    def on_postgres(connection: Any) -> T:
        with connection.transaction():
            return work(lambda sql, params=(): connection.execute(sql.replace("?", "%s"), params))

    result: T = run(on_postgres)
    return result


def _rows(execute: Execute) -> dict[str, str]:
    execute(CREATE)
    return {str(name): str(value) for name, value in execute(READ).fetchall()}


def _decide(execute: Execute) -> int:
    rows = _rows(execute)
    stored = _version_of(rows)
    if "version" not in rows or stored < SCHEMA_VERSION:
        execute(WRITE, ("version", str(SCHEMA_VERSION)))
        execute(WRITE, ("written_by", package_version()))
    return stored


def _decide_reading(execute: Execute, postgres: bool = False) -> int:
    exists = execute(EXISTS_POSTGRES if postgres else EXISTS_SQLITE).fetchone()
    if not exists or not exists[0]:
        return 1  # A ledger from before the table: the first layout.
    return _version_of({str(name): str(value) for name, value in execute(READ).fetchall()})


def _version_of(rows: dict[str, str]) -> int:
    """The stored version; raises SchemaTooNew or SchemaUnreadable."""
    text = rows.get("version", "1")
    if not VERSION_FORMAT.fullmatch(text):
        raise SchemaUnreadable(
            f"this ledger's schema version {_shown(text)} is not a version (a positive integer) that any "
            "trainledger writes: the ledger_schema table was edited or damaged; restore it from a backup"
        )
    stored = int(text)
    if stored > SCHEMA_VERSION:
        writer = rows.get("written_by", "a newer release")[:SHOWN_CHARS_MAX]
        raise SchemaTooNew(
            f"this ledger has schema version {stored} (written by trainledger {writer}); trainledger "
            f"{package_version()} reads schema versions up to {SCHEMA_VERSION}: upgrade trainledger to open it"
        )
    return stored


def _shown(text: str) -> str:
    """`text` quoted and cut for a message (a stored value may be anything)."""
    if len(text) > SHOWN_CHARS_MAX:
        return repr(text[:SHOWN_CHARS_MAX] + "…")
    return repr(text)

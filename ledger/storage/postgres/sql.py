"""The views' portable SQL on PostgreSQL: translation, cursors, and the views' tables.

ledger.views.handlers and ledger.views.queries write SQL once, with `?` placeholders, for both
backends. Here that SQL is translated to psycopg's, NUL is kept out of text columns, and reads
run lazily on pooled connections (ReadConnection is what ViewReader.connect() returns).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from ledger.storage.postgres.storage import PostgresStorage

__all__ = ["Cursor", "PG_TYPES", "ReadConnection", "ReadCursor", "clean", "table_ddl", "translate"]

PG_TYPES = {int: "BIGINT", float: "DOUBLE PRECISION", str: "TEXT", bytes: "BYTEA"}


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """Portable SQL (qmark) to psycopg's: `?` -> %s and `%` -> %% outside quoted text."""
    out = []
    quote = ""
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        if char == "%":
            out.append("%%")
        else:
            out.append(char)
    return "".join(out)


def clean(params: Sequence[Any] | None) -> Sequence[Any]:
    """PostgreSQL text cannot hold NUL: replace it (U+FFFD) rather than wedge the projector on
    an event that SQLite would have taken."""
    if not params:
        return ()
    if any(type(value) is str and "\x00" in value for value in params):
        return tuple(value.replace("\x00", "\ufffd") if type(value) is str else value for value in params)
    return params


def table_ddl(table: str, columns: dict[str, type], pk: tuple[str, ...], indexes: list[tuple[str, ...]]) -> list[str]:
    """CREATE statements for one view table declared in ledger.views.schema.TABLES."""
    fields = ", ".join(f"{name} {PG_TYPES[kind]}" for name, kind in columns.items())
    statements = [f"CREATE TABLE IF NOT EXISTS {table} ({fields}, PRIMARY KEY ({', '.join(pk)}))"]
    for index in indexes:
        statements.append(f"CREATE INDEX IF NOT EXISTS idx_{table}_{'_'.join(index)} ON {table} ({', '.join(index)})")
    return statements


class Cursor:
    """A psycopg cursor that speaks the views' portable SQL."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] | None = ()) -> Cursor:
        self._cursor.execute(translate(sql), clean(params))
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._cursor.executemany(translate(sql), [clean(row) for row in rows])

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def close(self) -> None:
        self._cursor.close()


class ReadCursor:
    """One read, run lazily: fetchone/fetchall take a pooled connection for one statement;
    iterating streams the rows through a server-side cursor (a few rows per round trip), so a
    reader that stops early (a series page) never loads the rest. Outages raise
    Unavailable."""

    __slots__ = ("_storage", "_query", "_rows", "_stream")

    def __init__(self, storage: PostgresStorage) -> None:
        self._storage = storage
        self._query: tuple[str, Sequence[Any]] = ("", ())
        self._rows: list[Any] | None = None
        self._stream: Iterator[Any] | None = None

    def execute(self, sql: str, params: Sequence[Any] | None = ()) -> ReadCursor:
        self.close()
        self._query = (translate(sql), clean(params))
        return self

    def _fetched(self) -> list[Any]:
        if self._rows is None:
            sql, params = self._query

            def run(connection: psycopg.Connection[Any]) -> list[Any]:
                cursor = connection.execute(sql, params)
                return cursor.fetchall() if cursor.description else []

            self._rows = self._storage.run(run)
        return self._rows

    def fetchall(self) -> list[Any]:
        rows = self._fetched()
        self._rows = []
        return rows

    def fetchone(self) -> Any:
        rows = self._fetched()
        return rows.pop(0) if rows else None

    def __iter__(self) -> Iterator[Any]:
        if self._rows is not None:
            return iter(self.fetchall())
        self._stream = self._storage.stream(*self._query)
        return self._stream

    def close(self) -> None:
        stream, self._stream, self._rows = self._stream, None, None
        if stream is not None:
            stream.close()  # type: ignore[attr-defined]


class ReadConnection:
    """What ViewReader.connect() returns: any thread may use it."""

    __slots__ = ("_storage",)

    def __init__(self, storage: PostgresStorage) -> None:
        self._storage = storage

    def cursor(self) -> ReadCursor:
        return ReadCursor(self._storage)

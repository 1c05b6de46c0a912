"""The views' portable SQL on PostgreSQL: translation, cursors, and the views' tables.

The views' handlers and reads (ledger.views, against ledger.views.store) write SQL once, with `?`
placeholders, for both backends. Here that SQL is translated to psycopg's, NUL is kept out of text
columns, and reads run lazily on pooled connections (ReadConnection is what ViewReader.connect()
returns).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import psycopg

from ledger.views.schema import TABLES
from ledger.views.store import ReadTooLong

__all__ = [
    "Cursor",
    "PG_TYPES",
    "ReadConnection",
    "ReadCursor",
    "ReadSource",
    "clean",
    "many_rows",
    "table_ddl",
    "translate",
]

T = TypeVar("T")

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
    for value in params:  # A loop, not any(): this runs for every row a projector writes.
        if type(value) is str and "\x00" in value:
            return tuple(value.replace("\x00", "\ufffd") if type(value) is str else value for value in params)
    return params


# INSERT INTO table (columns) VALUES (?, ..., ?) and what follows (ON CONFLICT ...), in portable SQL.
_INSERT_VALUES = re.compile(
    r"\s*INSERT\s+INTO\s+(\w+)\s*\(([\w\s,]+)\)\s*VALUES\s*\(([?\s,]+)\)(.*)", re.IGNORECASE | re.DOTALL
)
_CONFLICT_TARGET = re.compile(r"\s*ON\s+CONFLICT\s*\(([\w\s,]+)\)\s*DO\s+UPDATE\b", re.IGNORECASE)
_ANY_CONFLICT_UPDATE = re.compile(r"\bDO\s+UPDATE\b", re.IGNORECASE)
# What each column type's values may be, for one array per column.
_ARRAY_VALUES: dict[type, tuple[type, ...]] = {
    int: (int,),
    float: (float, int),
    str: (str,),
    bytes: (bytes,),
}


class _ManyRows:
    """How an INSERT of one row of `?`s into a view table is sent as one statement over arrays."""

    __slots__ = ("sql", "kinds", "key")

    def __init__(self, sql: str, kinds: list[type], key: list[int] | None) -> None:
        self.sql = sql
        self.kinds = kinds
        # Indexes of the conflict target's columns (DO UPDATE): the rows must differ on them.
        self.key = key


@functools.lru_cache(maxsize=256)
def many_rows(sql: str) -> _ManyRows | None:
    """The one-statement form of `sql` for many rows, where `sql` inserts one row of `?`s into
    a table of ledger.views.schema.TABLES (whatever follows VALUES kept as it is); else None."""
    match = _INSERT_VALUES.fullmatch(sql)
    if match is None:
        return None
    table, columns_text, marks, rest = match.groups()
    columns = [name.strip() for name in columns_text.split(",")]
    declared = TABLES.get(table)
    if declared is None or marks.count("?") != len(columns) or marks.replace("?", "").replace(",", "").strip():
        return None
    if any(name not in declared.columns for name in columns) or "?" in rest:
        return None
    key: list[int] | None = None
    if _ANY_CONFLICT_UPDATE.search(rest):
        target = _CONFLICT_TARGET.match(rest)
        if target is None:
            return None
        names = [name.strip() for name in target.group(1).split(",")]
        if any(name not in columns for name in names):
            return None
        key = [columns.index(name) for name in names]
    kinds = [declared.columns[name] for name in columns]
    arrays = ", ".join(f"%b::{PG_TYPES[kind]}[]" for kind in kinds)
    statement = f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM unnest({arrays}){translate(rest)}"
    return _ManyRows(statement, kinds, key)


def _columns(plan: _ManyRows, rows: Sequence[Sequence[Any]]) -> list[list[Any]] | None:
    """The rows as one list per column, or None when a value does not fit its column's array
    (the rows are then sent one by one, as written) or rows repeat a conflict key."""
    if plan.key is not None and len({tuple(row[i] for i in plan.key) for row in rows}) != len(rows):
        return None
    columns: list[list[Any]] = []
    for index, kind in enumerate(plan.kinds):
        allowed = _ARRAY_VALUES[kind]
        values = [row[index] for row in rows]
        for value in values:
            if value is not None and type(value) not in allowed:
                return None
        if kind is float:
            values = [float(v) if type(v) is int else v for v in values]
        elif kind is str:
            values = [v.replace("\x00", "\ufffd") if v is not None and "\x00" in v else v for v in values]
        columns.append(values)
    return columns


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
        """Rows inserted into a view table go as one statement over one array per column (one
        row, one result, instead of one each); anything else, one statement per row."""
        if len(rows) > 1:
            plan = many_rows(sql)
            columns = None if plan is None else _columns(plan, rows)
            if plan is not None and columns is not None:
                self._cursor.execute(plan.sql, columns)
                return
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


class ReadSource(Protocol):
    """What the reads run on: PostgresStorage, with its pool and its one retry rule."""

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` on a pooled connection; raises Unavailable when the database cannot be reached."""
        ...

    def stream(self, sql: str, params: Sequence[Any]) -> Iterator[Any]:
        """The rows of a query, a few per round trip; close the generator to stop early."""
        ...


# Rows read ahead by ReadConnection.prefetch, by (storage, statement, parameters), for this thread.
_prefetched = threading.local()


class ReadCursor:
    """One read, run lazily: fetchone/fetchall take a pooled connection for one statement;
    iterating streams the rows through a server-side cursor (a few rows per round trip), so a
    reader that stops early (a series page) never loads the rest. Outages raise
    Unavailable."""

    __slots__ = ("_storage", "_query", "_rows", "_stream")

    def __init__(self, storage: ReadSource) -> None:
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
            prefetched: dict[tuple[int, str, tuple[Any, ...]], list[Any]] | None = getattr(_prefetched, "rows", None)
            if prefetched is not None:
                ahead = prefetched.pop((id(self._storage), sql, tuple(params)), None)
                if ahead is not None:
                    self._rows = ahead
                    return ahead

            limit_s: float | None = getattr(_bound, "limit_s", None)

            def run(connection: psycopg.Connection[Any]) -> list[Any]:
                if limit_s is None:
                    cursor = connection.execute(sql, params)
                    return cursor.fetchall() if cursor.description else []
                return _bounded(connection, sql, params, limit_s)

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


# The limit of this thread's bounded reads (ReadConnection.bounded), None when unbounded.
_bound = threading.local()


def _bounded(connection: psycopg.Connection[Any], sql: str, params: Sequence[Any], limit_s: float) -> list[Any]:
    """The rows of `sql`, stopped by PostgreSQL after `limit_s` (ReadTooLong); the connection's
    timeout is put back before it returns to the pool."""
    connection.execute(b"SELECT set_config('statement_timeout', %s, false)", (f"{max(1, round(limit_s * 1000))}ms",))
    try:
        cursor = connection.execute(sql, params)
        return cursor.fetchall() if cursor.description else []
    except psycopg.errors.QueryCanceled:
        raise ReadTooLong(limit_s) from None
    finally:
        connection.execute(b"RESET statement_timeout")


class ReadConnection:
    """What ViewReader.connect() returns: any thread may use it."""

    __slots__ = ("_storage",)

    def __init__(self, storage: ReadSource) -> None:
        self._storage = storage

    def cursor(self) -> ReadCursor:
        return ReadCursor(self._storage)

    @contextmanager
    def bounded(self, limit_s: float) -> Iterator[None]:
        """Within the block, each read this thread fetches whole is stopped by PostgreSQL after
        `limit_s` (statement_timeout), raising ReadTooLong (ledger.views.store.Query.bounded_rows)."""
        outer = getattr(_bound, "limit_s", None)
        _bound.limit_s = limit_s
        try:
            yield
        finally:
            _bound.limit_s = outer

    @contextmanager
    def prefetch(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> Iterator[None]:
        """Run `queries` now, on one pooled connection in one round trip, and answer each from
        memory the first time this thread runs it again within the block (ViewReader.together).
        They go as one text of several statements, their parameters bound by psycopg on this side
        (ClientCursor, quoted as literals): a pipeline of as many statements cost about twice the
        client's CPU (psycopg waits on the socket once per statement)."""
        statements = [(translate(sql), clean(params)) for sql, params in queries]
        text = "; ".join(sql for sql, _ in statements)
        values = [value for _, params in statements for value in params]

        def run(connection: psycopg.Connection[Any]) -> list[list[Any]]:
            with psycopg.ClientCursor(connection) as cursor:
                cursor.execute(text, values)
                return [cursor.fetchall() if cursor.description else [] for _ in cursor.results()]

        results = self._storage.run(run)
        outer = getattr(_prefetched, "rows", None)
        _prefetched.rows = {
            **(outer or {}),
            **{
                (id(self._storage), sql, tuple(params)): rows
                for (sql, params), rows in zip(statements, results, strict=True)
            },
        }
        try:
            yield
        finally:
            _prefetched.rows = outer

"""What the views need of the database that holds them, whichever backend it is.

The views are written once, against plain SQL with `?` placeholders that both backends accept
(ledger.storage.postgres rewrites them), and against the few calls typed here:

- `Table`: how each view declares a table it owns (ledger.views.schema assembles them; each
  backend makes its CREATE statements from them);
- `ViewCursor`: what a handler writes with, inside the projector's transaction;
- `ReadConnection` and `ReadCursor`: what a read runs on (this thread's connection);
- `ViewStore`: what the projector asks of the database (ledger.storage.sqlite.SQLiteStorage and
  ledger.storage.postgres.PostgresStorage);
- `Query`: the runner every reader of the views is given (composition, not a shared base class).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, NamedTuple, Protocol, TypeVar

__all__ = [
    "POSITION_ROW",
    "Query",
    "ReadConnection",
    "ReadCursor",
    "ReadTooLong",
    "Table",
    "ViewCursor",
    "ViewStore",
    "tracking_position",
]

#: A view's tracking position: the log position it has projected up to (view_tracking, made by
#: each backend beside the views' tables).
POSITION_ROW = "SELECT position FROM view_tracking WHERE view = ?"
#: How many of SQLite's virtual machine steps a bounded read takes between two looks at its clock.
PROGRESS_STEPS = 1_000


class Table(NamedTuple):
    """A view table: columns {name: Python type}, primary key, extra indexes, and the view that
    owns it (rebuilding that view drops it); "" for view_names, which maps account and family
    aggregate ids to their names: any view may add to it, none owns it."""

    columns: dict[str, type]
    primary_key: tuple[str, ...]
    indexes: list[tuple[str, ...]]
    view: str


class ViewCursor(Protocol):
    """The cursor a handler writes the views with, in the projector's transaction."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> object: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> object: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class ReadCursor(Protocol):
    """A cursor of a read: its rows fetched whole or iterated (streamed where the backend can)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Iterable[Any]: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class ReadConnection(Protocol):
    """This thread's connection for reads. A backend that can answer several queries in one round
    trip also has `prefetch(queries)` (see Query.together)."""

    def cursor(self) -> ReadCursor: ...


WriteCursorT = TypeVar("WriteCursorT")


class ViewStore(Protocol[WriteCursorT]):
    """What the projector asks of the database holding the views: their tracking positions, a
    write transaction (its cursor is the handlers' ViewCursor), and dropping views to rebuild them.
    `outage_errors` are the errors that mean the storage is unavailable (retried, not a bug)."""

    @property
    def outage_errors(self) -> tuple[type[BaseException], ...]: ...

    def tracking_positions(self) -> dict[str, int]: ...

    def transaction(self) -> AbstractContextManager[WriteCursorT]: ...

    def lock_tracking(self, cursor: WriteCursorT) -> dict[str, int]: ...

    def set_tracking(self, cursor: WriteCursorT, views: Sequence[str], position: int) -> None: ...

    def drop(self, views: tuple[str, ...]) -> None: ...


class ReadTooLong(Exception):
    """A bounded read (Query.bounded_rows) ran past its limit and was stopped."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"the read ran past its limit of {limit_s:g} s")
        self.limit_s = limit_s


class Query:
    """Runs the reads of the views on `connect()` (this thread's connection). `events_table` and
    `events_position` name the log's table and its column of positions as the views' connections
    see them (SQLite's by default; the PostgreSQL storage gives its own): series and chart reads
    join their batch rows with the events that hold the batches' columns."""

    def __init__(
        self,
        connect: Callable[[], ReadConnection],
        *,
        events_table: str = "stored_events",
        events_position: str = "rowid",
    ) -> None:
        self.connect = connect
        self.events_table = events_table
        self.events_position = events_position

    def cursor(self) -> ReadCursor:
        """A cursor of this thread's connection, for a read that streams its rows (close it)."""
        return self.connect().cursor()

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        cursor = self.connect().cursor()
        try:
            cursor.execute(sql, params)
            rows: list[Any] = cursor.fetchall()
            return rows
        finally:
            cursor.close()

    def bounded_rows(self, sql: str, params: tuple[Any, ...] = (), *, limit_s: float) -> list[Any]:
        """`rows`, stopped with ReadTooLong once it has taken `limit_s`: on SQLite the reading
        thread's CPU time (a progress handler, so a busy machine does not stop a read that is
        merely waiting), on PostgreSQL the statement's time (its statement_timeout)."""
        connection = self.connect()
        bounded = getattr(connection, "bounded", None)
        if bounded is not None:  # PostgreSQL's ReadConnection.
            with bounded(limit_s):
                return self.rows(sql, params)
        assert isinstance(connection, sqlite3.Connection)
        started = time.thread_time()
        connection.set_progress_handler(lambda: time.thread_time() - started > limit_s, PROGRESS_STEPS)
        try:
            return self.rows(sql, params)
        except sqlite3.OperationalError as error:
            if str(error) == "interrupted":
                raise ReadTooLong(limit_s) from None
            raise
        finally:
            connection.set_progress_handler(None, 0)

    def row(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The first row of `sql`, None when it has none."""
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    def with_columns(self, select: str) -> str:
        """`select` (of view_series rows, aliased s) joined with the events holding their columns,
        as `state` after the selected columns."""
        head, _, tail = select.partition(" FROM view_series s")
        return (
            f"{head}, e.state FROM view_series s JOIN {self.events_table} e"
            f" ON e.{self.events_position} = s.position{tail}"
        )

    @contextmanager
    def together(self, queries: list[tuple[str, tuple[Any, ...]]]) -> Iterator[None]:
        """Within the block, `queries` (SQL and parameters, as the block will run them) are
        answered from one round trip made at its start, where the storage can (PostgreSQL:
        `prefetch` on its connection); elsewhere (SQLite, in-process) each runs when
        asked. A query the block does not run again costs that round trip only."""
        prefetch = getattr(self.connect(), "prefetch", None)
        if prefetch is None:
            yield
            return
        with prefetch(queries):
            yield


def tracking_position(query: Query, view: str) -> int:
    """The position `view` has projected up to, as committed (0 before any)."""
    row = query.row(POSITION_ROW, (view,))
    return int(row[0]) if row else 0

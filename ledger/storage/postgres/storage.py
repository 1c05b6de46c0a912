"""PostgresStorage: the views and their tracking in the events' schema, over a pool of their own.

The views are read through ledger.storage.postgres.sql (portable SQL on psycopg); projection
transactions run in pipeline mode (one round trip per fetch, not per statement). Every call goes
through the one retry rule of ledger.storage.postgres.connections and raises Unavailable
when the database cannot be reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, TypeVar
from uuid import UUID

import psycopg
import psycopg_pool
from eventsourcing.application import Application
from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore, PostgresFactory
from psycopg.sql import SQL, Composed, Identifier

from ledger.domain.errors import Unavailable
from ledger.storage.base import KeyRow, Storage, ViewRead, read_only, tracking_upsert
from ledger.storage.chain import GENESIS, ChainRow, seal_rows
from ledger.storage.postgres.connections import (
    RECONNECT_TIMEOUT_S,
    connect_kwargs,
    lock_key,
    pipelined_transaction,
    retrying,
    sorts_by_bytes,
    where,
)
from ledger.storage.postgres.projector import PostgresProjector
from ledger.storage.postgres.recorders import keys_table_name, seals_table_name
from ledger.storage.postgres.sql import Cursor, ReadConnection, table_ddl
from ledger.views.queries import ViewReader
from ledger.views.schema import TABLES, VIEWS

__all__ = ["PostgresStorage"]

T = TypeVar("T")
# A process that stops mid-transaction (SIGSTOP, a debugger) must not hold the projection lock.
VIEW_IDLE_IN_TRANSACTION_S = 60
# Rows per round trip when a read is iterated (a series page reads a few batch rows).
STREAM_ROWS = 10
NAME_MAX = 63  # PostgreSQL identifiers (channel names) are cut beyond this.
DRIVER_OUTAGES = (psycopg.OperationalError, psycopg.InterfaceError)
# Events read per statement while a log written before the chain existed is sealed.
SEAL_PAGE_EVENTS = 1000


def unavailable(error: BaseException) -> Unavailable:
    return Unavailable(f"storage is unavailable: {error}")


class PostgresStorage(Storage):
    """Views and their tracking in the events' schema, over a pool of their own."""

    shared = True
    byte_order = ' COLLATE "C"'
    tables_select = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    outage_errors = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)

    def __init__(self, app: Application[UUID]) -> None:
        self.app = app
        assert isinstance(app.factory, PostgresFactory) and isinstance(app.recorder, PostgresApplicationRecorder)
        datastore: PostgresDatastore = app.factory.datastore
        recorder = app.recorder
        self.schema = datastore.schema
        self.channel = recorder.channel_name
        # NOTIFYed by a projector with each chunk it commits (followers LISTEN to it).
        self.views_channel = f"{self.channel[: NAME_MAX - len('_views')]}_views"
        self.connect_kwargs = connect_kwargs(datastore)
        self.timeout_s = float(datastore.pool.timeout)
        self._events = SQL("{}.{}").format(Identifier(self.schema), Identifier(recorder.events_table_name))
        self._keys = SQL("{}.{}").format(
            Identifier(self.schema), Identifier(keys_table_name(recorder.events_table_name))
        )
        self._seals = SQL("{}.{}").format(
            Identifier(self.schema), Identifier(seals_table_name(recorder.events_table_name))
        )
        snapshots = app.snapshots.recorder.events_table_name if app.snapshots is not None else None  # type: ignore[attr-defined]
        self._snapshots = (
            None if snapshots is None else SQL("{}.{}").format(Identifier(self.schema), Identifier(snapshots))
        )
        self.read_only = read_only(app)
        configure = SQL("SET search_path TO {}; SET idle_in_transaction_session_timeout = '{}s'").format(
            Identifier(self.schema), VIEW_IDLE_IN_TRANSACTION_S
        )
        if self.read_only:
            # A ledger opened to check it (verify): the database refuses any write of ours.
            configure = Composed([configure, SQL("; SET default_transaction_read_only = on")])

        def configure_connection(connection: psycopg.Connection[Any]) -> None:
            connection.execute(configure)

        # No prepared statements: drop() runs DROPs in pipeline mode (see pipelined_transaction).
        kwargs = {**self.connect_kwargs, "autocommit": True, "prepare_threshold": None}
        self.pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            kwargs={**kwargs, "connect_timeout": max(1, int(self.timeout_s))},
            min_size=1,
            max_size=max(2, datastore.pool.max_size),
            open=False,
            configure=configure_connection,
            timeout=self.timeout_s,
            reconnect_timeout=RECONNECT_TIMEOUT_S,
            name=f"trainledger-views-{self.schema}",
        )
        try:
            self.pool.open(wait=True, timeout=self.timeout_s)
            if not self.read_only:
                self.create_tables()
            search_order = "" if self.run(sorts_by_bytes) else self.byte_order
        except (psycopg.Error, psycopg_pool.PoolTimeout) as error:
            self.pool.close()
            raise Unavailable(f"cannot open the views on {where(self.connect_kwargs)}: {error}") from None
        # Series pages and charts read their batches' columns from the events (ledger.views.store.Query).
        self.views = ViewReader(
            lambda: ReadConnection(self),
            events_table=f'"{recorder.events_table_name}"',
            events_position="notification_id",
            byte_order=search_order,
        )

    def projector(self, app: Application[UUID]) -> PostgresProjector:
        return PostgresProjector(app, self)

    # Connections.

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` on a pooled connection (autocommit), tried again on a fresh one if the pooled
        one died; raises Unavailable when the database cannot be reached."""

        def attempt() -> T:
            with self.pool.connection() as connection:
                return work(connection)

        return retrying(attempt, errors=DRIVER_OUTAGES, drop_dead=self.pool.check, refusal=unavailable)

    def stream(self, sql: str, params: Sequence[Any], rows_per_fetch: int = STREAM_ROWS) -> Iterator[Any]:
        """The rows of a query, fetched `rows_per_fetch` at a time through a server-side cursor
        in a transaction of its own; close the generator to stop early. Until its first rows
        arrive the query is tried again on a fresh connection if the pooled one died."""

        def opened() -> tuple[ExitStack, psycopg.ServerCursor[Any], list[Any]]:
            with ExitStack() as stack:
                connection = stack.enter_context(self.pool.connection())
                stack.enter_context(connection.transaction())
                cursor = stack.enter_context(connection.cursor(name="trainledger_read"))
                cursor.itersize = rows_per_fetch
                cursor.execute(sql, params)
                first = cursor.fetchmany(rows_per_fetch)
                return stack.pop_all(), cursor, first

        stack, cursor, first = retrying(opened, errors=DRIVER_OUTAGES, drop_dead=self.pool.check, refusal=unavailable)
        try:
            with stack:
                yield from first
                if len(first) == rows_per_fetch:
                    yield from cursor
        except DRIVER_OUTAGES as error:
            raise unavailable(error) from error

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        try:
            # Pipeline mode, BEGIN and COMMIT among the statements: a chunk costs a round trip or two.
            # The views are derived from the log and commit with their tracking positions: a
            # commit lost in a crash is projected again from the events, durable before they are
            # visible. So the views' commits do not wait for the WAL flush.
            with (
                self.pool.connection() as connection,
                pipelined_transaction(connection, b"SET LOCAL synchronous_commit = off") as cursor,
            ):
                yield Cursor(cursor)
        except DRIVER_OUTAGES:
            if not self.pool.closed:
                self.pool.check()  # Drop the dead connections a restart left behind.
            raise

    # Tables.

    def create_tables(self, cursor: Cursor | None = None) -> None:
        if cursor is None:
            with self.transaction() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(?)", (lock_key(self.schema),))
                self.create_tables(cursor)
            return
        for table, (columns, pk, indexes, _) in TABLES.items():
            for statement in table_ddl(table, columns, pk, indexes):
                cursor.execute(statement)
        cursor.execute("CREATE TABLE IF NOT EXISTS view_tracking (view TEXT PRIMARY KEY, position BIGINT NOT NULL)")
        # The rows exist from the start so a projector can lock them (SELECT ... FOR UPDATE).
        cursor.executemany(
            "INSERT INTO view_tracking (view, position) VALUES (?, 0) ON CONFLICT (view) DO NOTHING",
            [(view,) for view in VIEWS],
        )

    def tracking_positions(self) -> dict[str, int]:
        rows = dict(self.run(lambda c: c.execute("SELECT view, position FROM view_tracking").fetchall()))
        return {view: rows.get(view, 0) for view in VIEWS}

    def lock_tracking(self, cursor: Cursor) -> dict[str, int]:
        """Lock the views' tracking rows until the transaction ends; their positions."""
        rows = dict(cursor.execute("SELECT view, position FROM view_tracking ORDER BY view FOR UPDATE").fetchall())
        return {view: rows.get(view, 0) for view in VIEWS}

    def set_tracking(self, cursor: Cursor, views: Sequence[str], position: int) -> None:
        """Move `views` to `position`: one statement for them all (a chunk moves every view)."""
        if views:
            cursor.execute(tracking_upsert(len(views)), [value for view in views for value in (view, position)])

    def drop(self, views: tuple[str, ...]) -> None:
        """Empty `views` and reset their positions, in one transaction under the projection lock."""
        with self.transaction() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(?)", (lock_key(self.schema),))
            self.lock_tracking(cursor)
            for table, (*_, owner) in TABLES.items():
                if owner in views or (owner == "" and set(views) == set(VIEWS)):
                    cursor.execute(f"DROP TABLE IF EXISTS {table}")
            for view in views:
                cursor.execute("UPDATE view_tracking SET position = 0 WHERE view = ?", (view,))
            self.create_tables(cursor)

    # The log.

    def position_of(self, originator_id: UUID, version: int) -> int:
        statement = SQL("SELECT notification_id FROM {} WHERE originator_id = %s AND originator_version = %s").format(
            self._events
        )
        row = self.run(lambda c: c.execute(statement, (originator_id, version)).fetchone())
        if row is None:
            raise LookupError(f"no stored event {originator_id} v{version}")
        return int(row[0])

    def head(self) -> int:
        statement: Composed = SQL("SELECT MAX(notification_id) FROM {}").format(self._events)
        row = self.run(lambda c: c.execute(statement).fetchone())
        return int(row[0] or 0) if row else 0

    def key_versions(self, originator_id: UUID, key: str) -> list[int]:
        statement = SQL(
            "SELECT originator_version FROM {} WHERE originator_id = %s AND key = %s ORDER BY originator_version"
        ).format(self._keys)
        rows = self.run(lambda c: c.execute(statement, (originator_id, key)).fetchall())
        return [int(row[0]) for row in rows]

    def latest_key_versions(self, originator_id: UUID, keys: Sequence[str]) -> dict[str, int]:
        statement = SQL(
            "SELECT key, MAX(originator_version) FROM {} WHERE originator_id = %s AND key = ANY(%s) GROUP BY key"
        ).format(self._keys)
        rows = self.run(lambda c: c.execute(statement, (originator_id, list(keys))).fetchall())
        return {key: int(version) for key, version in rows}

    def insert_keys(self, rows: list[KeyRow]) -> None:
        statement = SQL(
            "INSERT INTO {} (originator_id, key, originator_version) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
        ).format(self._keys)

        def insert(connection: psycopg.Connection[Any]) -> None:
            with connection.transaction(), connection.cursor() as cursor:
                cursor.executemany(statement, rows)

        self.run(insert)

    def keyed_event_counts(self, topics: Sequence[str]) -> tuple[dict[UUID, int], dict[UUID, int]]:
        logged = SQL("SELECT originator_id, COUNT(*) FROM {} WHERE topic = ANY(%s) GROUP BY originator_id").format(
            self._events
        )
        indexed = SQL("SELECT originator_id, COUNT(DISTINCT originator_version) FROM {} GROUP BY originator_id").format(
            self._keys
        )

        def read(connection: psycopg.Connection[Any]) -> tuple[dict[UUID, int], dict[UUID, int]]:
            return (
                {a: int(n) for a, n in connection.execute(logged, (list(topics),)).fetchall()},
                {a: int(n) for a, n in connection.execute(indexed).fetchall()},
            )

        return self.run(read)

    def indexed(self, rows: Sequence[KeyRow]) -> set[KeyRow]:
        statement = SQL(
            "SELECT k.originator_id, k.key, k.originator_version FROM {} k"
            " JOIN unnest(%s::uuid[], %s::text[], %s::bigint[]) AS w(a, key, v)"
            " ON k.originator_id = w.a AND k.key = w.key AND k.originator_version = w.v"
        ).format(self._keys)
        columns = ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
        found = self.run(lambda c: c.execute(statement, columns).fetchall())
        return {(a, k, int(v)) for a, k, v in found}

    def keys_count(self) -> int:
        statement = SQL("SELECT COUNT(*) FROM {}").format(self._keys)
        row = self.run(lambda c: c.execute(statement).fetchone())
        return int(row[0]) if row else 0

    def key_rows(self, after: KeyRow | None, limit: int) -> list[KeyRow]:
        where, params = SQL(""), []
        if after is not None:
            where, params = SQL(" WHERE (originator_id, key, originator_version) > (%s, %s, %s)"), list(after)
        statement = SQL(
            "SELECT originator_id, key, originator_version FROM {}{} ORDER BY originator_id, key, originator_version"
            " LIMIT %s"
        ).format(self._keys, where)
        rows = self.run(lambda c: c.execute(statement, (*params, limit)).fetchall())
        return [(a, k, int(v)) for a, k, v in rows]

    # The hash chain (ledger.storage.chain).

    def seals_missing(self) -> bool:
        def check(connection: psycopg.Connection[Any]) -> bool:
            if connection.execute(SQL("SELECT 1 FROM {} LIMIT 1").format(self._seals)).fetchone() is not None:
                return False
            return connection.execute(SQL("SELECT 1 FROM {} LIMIT 1").format(self._events)).fetchone() is not None

        return bool(self.run(check))

    def seal_log(self) -> int:
        select = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state FROM {}"
            " WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(self._events)
        insert = SQL("INSERT INTO {} (position, digest) VALUES (%s, %s)").format(self._seals)

        def seal(connection: psycopg.Connection[Any]) -> int:
            with connection.transaction():
                # The lock every inserting transaction takes first: no writer meanwhile.
                connection.execute(SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(self._events))
                if connection.execute(SQL("SELECT 1 FROM {} LIMIT 1").format(self._seals)).fetchone() is not None:
                    return 0  # Another process sealed it first.
                after, previous, sealed = 0, GENESIS, 0
                while True:
                    rows = connection.execute(select, (after, SEAL_PAGE_EVENTS)).fetchall()
                    if not rows:
                        return sealed
                    seals = seal_rows(previous, [(r[0], r[1].bytes, r[2], r[3], bytes(r[4])) for r in rows])
                    with connection.cursor() as cursor:
                        cursor.executemany(insert, seals)
                    (after, previous), sealed = seals[-1], sealed + len(seals)

        return self.run(seal)

    def last_seal(self) -> tuple[int, bytes]:
        statement = SQL("SELECT position, digest FROM {} ORDER BY position DESC LIMIT 1").format(self._seals)
        row = self.run(lambda c: c.execute(statement).fetchone())
        return (0, GENESIS) if row is None else (int(row[0]), bytes(row[1]))

    def chain_page(self, after: int, stop: int, limit: int) -> tuple[list[ChainRow], list[tuple[int, bytes]]]:
        events = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state FROM {}"
            " WHERE notification_id > %s AND notification_id <= %s ORDER BY notification_id LIMIT %s"
        ).format(self._events)
        seals = SQL(
            "SELECT position, digest FROM {} WHERE position > %s AND position <= %s ORDER BY position LIMIT %s"
        ).format(self._seals)

        def read(connection: psycopg.Connection[Any]) -> tuple[list[ChainRow], list[tuple[int, bytes]]]:
            rows = connection.execute(events, (after, stop, limit)).fetchall()
            found = connection.execute(seals, (after, stop, limit)).fetchall()
            return (
                [(r[0], r[1].bytes, r[2], r[3], bytes(r[4])) for r in rows],
                [(int(r[0]), bytes(r[1])) for r in found],
            )

        return self.run(read)

    def digests(self, positions: Sequence[int]) -> dict[int, bytes]:
        statement = SQL("SELECT position, digest FROM {} WHERE position = ANY(%s)").format(self._seals)
        rows = self.run(lambda c: c.execute(statement, (list(positions),)).fetchall())
        return {int(row[0]): bytes(row[1]) for row in rows}

    def snapshot_ids(self) -> list[UUID]:
        if self._snapshots is None:
            return []
        statement = SQL("SELECT DISTINCT originator_id FROM {} ORDER BY originator_id").format(self._snapshots)
        return [row[0] for row in self.run(lambda c: c.execute(statement).fetchall())]

    @contextmanager
    def _view_read(self) -> Iterator[ViewRead]:
        def read(connection: psycopg.Connection[Any], sql: str) -> Iterator[Any]:
            with connection.cursor(name="trainledger_verify") as cursor:
                cursor.itersize = 1000
                cursor.execute(sql)
                yield from cursor

        try:
            with self.pool.connection() as connection, connection.transaction():
                # Every table as of one moment.
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield lambda sql: read(connection, sql)
        except DRIVER_OUTAGES as error:
            raise unavailable(error) from error

    def view_read(self) -> AbstractContextManager[ViewRead]:
        return self._view_read()

    def close(self) -> None:
        self.pool.close()

"""PostgreSQL, the scale-out backend: several server processes over one database.

Events live in eventsourcing's tables (`trainledger_events`, `trainledger_snapshots`), the views
in ours (TABLES of ledger.views.handlers plus view_tracking), all in one schema (`?schema=NAME` in the URL,
else public). What this module adds to eventsourcing's postgres persistence:

- recorders that give up quickly when the database is unreachable (the library retries each call
  ten times, each waiting the pool's full timeout) and drop dead pooled connections after a
  restart, so a command answers UnavailableError within about one connect timeout and the next
  one after the restart succeeds;
- the schema, created on first use under an advisory lock (several processes may start at once),
  and a NOTIFY channel per schema;
- PostgresStorage: the views in a psycopg pool of their own, read through a wrapper that runs the
  portable SQL of ledger.views.handlers and ledger.views.queries (`?` placeholders) on PostgreSQL; projection
  transactions run in pipeline mode (one round trip per fetch, not per statement);
- PostgresProjector: exactly once across processes. Each chunk is applied inside a transaction
  that first locks the views' tracking rows (SELECT ... FOR UPDATE) and re-reads them, so two
  projectors never apply the same position; the loser of the lock waits for the winner's commit,
  then sees the new positions and tells its own waiters. It is woken by LISTEN on the channel
  eventsourcing NOTIFYs on every insert (a poll of a few seconds is only a fallback), and NOTIFYs
  a views channel of its own with each chunk it commits;
- following (PostgresProjector.follow): a process that leaves projection to others (a server
  started with --no-project, next to `trainledger project` workers) applies nothing; it reads
  the committed tracking positions whenever the views channel says they moved, so its readers
  still wait for a position (read-your-writes) without a thread each.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit
from uuid import UUID

import psycopg
import psycopg_pool
from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresDatastore,
    PostgresFactory,
)
from eventsourcing.utils import get_topic
from psycopg.sql import SQL, Composable, Identifier

from ledger.domain.errors import UnavailableError
from ledger.views.projector import ProjectionFailed, Projector
from ledger.views.queries import ViewReader
from ledger.storage.sqlite import Storage
from ledger.views.handlers import TABLES, VIEWS

__all__ = ["Factory", "PostgresProjector", "PostgresStorage", "postgres_env"]

log = logging.getLogger(__name__)

# URL query parameters -> eventsourcing settings.
URL_SETTINGS = {
    "schema": "POSTGRES_SCHEMA",
    "connect_timeout": "POSTGRES_CONNECT_TIMEOUT",
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
    "max_waiting": "POSTGRES_MAX_WAITING",
    "lock_timeout": "POSTGRES_LOCK_TIMEOUT",
    "conn_max_age": "POSTGRES_CONN_MAX_AGE",
    "idle_in_transaction_session_timeout": "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT",
}
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")
# How long a caller waits for a pooled connection before the database counts as unavailable.
CONNECT_TIMEOUT_S = 5
# A pool gives up reconnecting one slot after this long and starts afresh on the next request,
# so its back-off (1, 2, 4 ... s) never grows past a few seconds after a long outage.
RECONNECT_TIMEOUT_S = 5.0
# Attempts of one recorder call when pooled connections turn out dead (after a restart).
ATTEMPTS = 3
# A process that stops mid-transaction (SIGSTOP, a debugger) must not hold the projection lock.
VIEW_IDLE_IN_TRANSACTION_S = 60
FALLBACK_POLL_S = 5.0
RETRY_MIN_S = 0.2
RETRY_MAX_S = 2.0
LISTEN_TIMEOUT_S = 0.1
# Rows per round trip when a read is iterated (a series page reads a few batch rows).
STREAM_ROWS = 10

NAME_MAX = 63  # PostgreSQL identifiers (channel names) are cut beyond this.

PG_TYPES = {int: "BIGINT", float: "DOUBLE PRECISION", str: "TEXT", bytes: "BYTEA"}


def postgres_env(url: str) -> dict[str, str]:
    """eventsourcing settings for `postgresql://user:password@host:port/dbname?schema=NAME`.
    Other query parameters: connect_timeout, pool_size, max_overflow, max_waiting, lock_timeout,
    conn_max_age, idle_in_transaction_session_timeout. Raises ValueError for a malformed URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"not a postgresql:// URL: {url!r}")
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or "/" in dbname:
        raise ValueError("the URL must name one database: postgresql://user@host:port/dbname")
    env = {
        "PERSISTENCE_MODULE": get_topic(Factory),
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_CONNECT_TIMEOUT": str(CONNECT_TIMEOUT_S),
    }
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        setting = URL_SETTINGS.get(key)
        if setting is None:
            raise ValueError(f"unknown parameter {key!r} in the database URL (known: {sorted(URL_SETTINGS)})")
        if key == "schema":
            if not SCHEMA_NAME.fullmatch(value):
                raise ValueError(f"schema must be a plain identifier of at most 48 characters: {value!r}")
        elif not value.isdigit():
            raise ValueError(f"{key} must be a whole number: {value!r}")
        env[setting] = value
    return env


# eventsourcing's recorders, bounded.


def keys_table_name(events_table_name: str) -> str:
    """The keys index of an events table (ledger.storage.keys)."""
    return f"{events_table_name}_keys"


def _lock_key(schema: str) -> int:
    """The advisory lock that serialises creating the schema and its tables."""
    return int.from_bytes(hashlib.blake2b(f"trainledger:{schema}".encode(), digest_size=8).digest(), "big",
                          signed=True)


def _gave_up(error: BaseException) -> bool:
    """True when the pool already waited its whole timeout for a connection."""
    cause = error.__cause__ or error
    return isinstance(cause, (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed))


def _bounded(method: Callable[..., Any]) -> Callable[..., Any]:
    """The recorder `method` without the library's retry (ten attempts, each waiting the pool's
    timeout): a call fails at once when the pool gave up, and tries again a couple of times when
    a pooled connection died (a restart), after dropping every dead one from the pool."""
    inner = getattr(method, "__wrapped__", method)

    @functools.wraps(inner)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        attempt = 1
        while True:
            try:
                return inner(self, *args, **kwargs)
            except (InterfaceError, OperationalError) as error:
                if attempt >= ATTEMPTS or _gave_up(error):
                    raise
                self.datastore.pool.check()
                time.sleep(0.05 * attempt)
                attempt += 1

    return call


@contextmanager
def _schema_lock(datastore: PostgresDatastore) -> Iterator[None]:
    """Hold the schema's advisory lock, creating the schema if missing: processes that start
    together must not race each other's CREATE statements."""
    schema = datastore.schema
    # A connection of its own, not the pool's: the CREATE statements under the lock take pooled
    # connections, and a pool of one must not wait for itself.
    with psycopg.connect(**_connect_kwargs(datastore), autocommit=True) as connection:
        connection.execute("SELECT pg_advisory_lock(%s)", (_lock_key(schema),))
        try:
            found = connection.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
            if found is None:
                connection.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
            yield
        finally:
            connection.execute("SELECT pg_advisory_unlock(%s)", (_lock_key(schema),))


class AggregateRecorder(PostgresAggregateRecorder):
    """The snapshots' recorder."""

    insert_events = _bounded(PostgresAggregateRecorder.insert_events)
    select_events = _bounded(PostgresAggregateRecorder.select_events)

    def create_table(self) -> None:
        with _schema_lock(self.datastore):
            super().create_table()


class ApplicationRecorder(PostgresApplicationRecorder):
    """The events' recorder: creates its schema, NOTIFYs a channel named after schema and table."""

    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        if datastore.schema != "public":
            # Channels are per database, not per schema: keep other schemas' inserts out.
            self.channel_name = f"{datastore.schema}_{self.channel_name}"[: self.MAX_IDENTIFIER_LEN]

    insert_events = _bounded(PostgresApplicationRecorder.insert_events)
    select_events = _bounded(PostgresApplicationRecorder.select_events)
    select_notifications = _bounded(PostgresApplicationRecorder.select_notifications)
    max_notification_id = _bounded(PostgresApplicationRecorder.max_notification_id)

    @property
    def keys_table(self) -> Composable:
        return SQL("{}.{}").format(Identifier(self.datastore.schema), Identifier(keys_table_name(self.events_table_name)))

    def create_table(self) -> None:
        with _schema_lock(self.datastore):
            super().create_table()
            with self.datastore.get_connection() as connection:
                connection.execute(SQL("CREATE TABLE IF NOT EXISTS {} (originator_id UUID, key TEXT,"
                                       " originator_version BIGINT, PRIMARY KEY (originator_id, key,"
                                       " originator_version))").format(self.keys_table))

    def _insert_events(self, curs: Any, stored_events: Any, **kwargs: Any) -> None:
        """The keys index (ledger.storage.keys) is written in the transaction of the events it indexes."""
        super()._insert_events(curs, stored_events, **kwargs)
        keys = kwargs.get("keys") or []
        if keys:
            curs.executemany(SQL("INSERT INTO {} (originator_id, key, originator_version) VALUES (%s, %s, %s)"
                                 " ON CONFLICT DO NOTHING").format(self.keys_table), keys)


class Factory(PostgresFactory):
    """eventsourcing's postgres persistence with the recorders above; checks the database
    answers before anything else, so a server that is down is reported at once and clearly."""

    aggregate_recorder_class = AggregateRecorder
    application_recorder_class = ApplicationRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        pool = self.datastore.pool
        pool.reconnect_timeout = RECONNECT_TIMEOUT_S
        assert isinstance(pool.kwargs, dict)
        pool.kwargs["connect_timeout"] = max(1, int(pool.timeout))
        _check_reachable(_connect_kwargs(self.datastore), pool.timeout)


def _connect_kwargs(datastore: PostgresDatastore) -> dict[str, Any]:
    kwargs = dict(datastore.pool.kwargs or {})
    kwargs.pop("row_factory", None)
    if datastore.pool.get_password_func is not None:
        kwargs["password"] = datastore.pool.get_password_func()
    return kwargs


def _where(kwargs: dict[str, Any]) -> str:
    return f"PostgreSQL at {kwargs.get('host')}:{kwargs.get('port')}/{kwargs.get('dbname')} as {kwargs.get('user')}"


def _check_reachable(kwargs: dict[str, Any], timeout_s: float) -> None:
    try:
        psycopg.connect(**{**kwargs, "connect_timeout": max(1, int(timeout_s))}).close()
    except psycopg.Error as error:
        reason = " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__
        raise OperationalError(f"cannot connect to {_where(kwargs)}: {reason}") from None


# The views.


def _translate(sql: str) -> str:
    """Portable SQL (qmark) to psycopg's: `?` -> %s and `%` -> %% outside quoted text."""
    return _translations(sql)


@functools.lru_cache(maxsize=1024)
def _translations(sql: str) -> str:
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


def _clean(params: Sequence[Any] | None) -> Sequence[Any]:
    """PostgreSQL text cannot hold NUL: replace it (U+FFFD) rather than wedge the projector on
    an event that SQLite would have taken."""
    if not params:
        return ()
    if any(type(value) is str and "\x00" in value for value in params):
        return tuple(value.replace("\x00", "\ufffd") if type(value) is str else value for value in params)
    return params


class _Cursor:
    """A psycopg cursor that speaks the views' portable SQL."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] | None = ()) -> _Cursor:
        self._cursor.execute(_translate(sql), _clean(params))
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._cursor.executemany(_translate(sql), [_clean(row) for row in rows])

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


class _ReadCursor:
    """One read, run lazily: fetchone/fetchall take a pooled connection for one statement;
    iterating streams the rows through a server-side cursor (a few rows per round trip), so a
    reader that stops early (a series page) never loads the rest. Outages raise
    UnavailableError."""

    __slots__ = ("_storage", "_query", "_rows", "_stream")

    def __init__(self, storage: PostgresStorage) -> None:
        self._storage = storage
        self._query: tuple[str, Sequence[Any]] = ("", ())
        self._rows: list[Any] | None = None
        self._stream: Iterator[Any] | None = None

    def execute(self, sql: str, params: Sequence[Any] | None = ()) -> _ReadCursor:
        self.close()
        self._query = (_translate(sql), _clean(params))
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


class _ReadConnection:
    """What ViewReader.connect() returns: any thread may use it."""

    __slots__ = ("_storage",)

    def __init__(self, storage: PostgresStorage) -> None:
        self._storage = storage

    def cursor(self) -> _ReadCursor:
        return _ReadCursor(self._storage)


def table_ddl(table: str, columns: dict[str, type], pk: tuple[str, ...], indexes: list[tuple[str, ...]]) -> list[str]:
    """CREATE statements for one view table declared in ledger.views.TABLES."""
    fields = ", ".join(f"{name} {PG_TYPES[kind]}" for name, kind in columns.items())
    statements = [f"CREATE TABLE IF NOT EXISTS {table} ({fields}, PRIMARY KEY ({', '.join(pk)}))"]
    for index in indexes:
        statements.append(f"CREATE INDEX IF NOT EXISTS idx_{table}_{'_'.join(index)} ON {table} ({', '.join(index)})")
    return statements


class PostgresStorage(Storage):
    """Views and their tracking in the events' schema, over a pool of their own."""

    shared = True
    outage_errors = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)

    def __init__(self, app: Any) -> None:
        self.app = app
        datastore: PostgresDatastore = app.factory.datastore
        recorder = app.recorder
        self.schema = datastore.schema
        self.channel = recorder.channel_name
        # NOTIFYed by a projector with each chunk it commits (followers LISTEN to it).
        self.views_channel = f"{self.channel[:NAME_MAX - len('_views')]}_views"
        self.connect_kwargs = _connect_kwargs(datastore)
        self.timeout_s = float(datastore.pool.timeout)
        self._events = SQL("{}.{}").format(Identifier(self.schema), Identifier(recorder.events_table_name))
        self._keys = SQL("{}.{}").format(Identifier(self.schema),
                                         Identifier(keys_table_name(recorder.events_table_name)))
        configure = SQL("SET search_path TO {}; SET idle_in_transaction_session_timeout = '{}s'").format(
            Identifier(self.schema), VIEW_IDLE_IN_TRANSACTION_S)

        def configure_connection(connection: psycopg.Connection[Any]) -> None:
            connection.execute(configure)

        self.pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            kwargs={**self.connect_kwargs, "autocommit": True, "connect_timeout": max(1, int(self.timeout_s))},
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
            self.create_tables()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as error:
            self.pool.close()
            raise UnavailableError(f"cannot open the views on {_where(self.connect_kwargs)}: {error}") from None
        self.views = ViewReader(lambda: _ReadConnection(self))

    def projector(self, app: Any) -> PostgresProjector:
        return PostgresProjector(app, self)

    # Connections.

    def run(self, work: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        """`work` on a pooled connection (autocommit), tried again on a fresh one if the pooled
        one died; raises UnavailableError when the database cannot be reached."""
        attempt = 1
        while True:
            try:
                with self.pool.connection() as connection:
                    return work(connection)
            except (psycopg.OperationalError, psycopg.InterfaceError) as error:
                if attempt >= ATTEMPTS or isinstance(error, (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed)):
                    raise UnavailableError(f"storage is unavailable: {error}") from error
                self.pool.check()
                attempt += 1

    def stream(self, sql: str, params: Sequence[Any], rows_per_fetch: int = STREAM_ROWS) -> Iterator[Any]:
        """The rows of a query, fetched `rows_per_fetch` at a time through a server-side cursor
        in a transaction of its own; close the generator to stop early."""
        attempt = 1
        started = False
        while True:
            try:
                with self.pool.connection() as connection, connection.transaction():
                    with connection.cursor(name="trainledger_read") as cursor:
                        cursor.itersize = rows_per_fetch
                        cursor.execute(sql, params)
                        for row in cursor:
                            started = True
                            yield row
                return
            except (psycopg.OperationalError, psycopg.InterfaceError) as error:
                if started or attempt >= ATTEMPTS or isinstance(
                        error, (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed)):
                    raise UnavailableError(f"storage is unavailable: {error}") from error
                self.pool.check()
                attempt += 1

    @contextmanager
    def transaction(self) -> Iterator[_Cursor]:
        try:
            # Pipeline mode: statements go out without waiting for each answer (a fetch syncs),
            # so a chunk of view updates costs a few round trips, not one per statement.
            with self.pool.connection() as connection, connection.pipeline(), connection.transaction():
                yield _Cursor(connection.cursor())
        except (psycopg.OperationalError, psycopg.InterfaceError):
            if not self.pool.closed:
                self.pool.check()  # Drop the dead connections a restart left behind.
            raise

    # Tables.

    def create_tables(self, cursor: _Cursor | None = None) -> None:
        if cursor is None:
            with self.transaction() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(self.schema),))
                self.create_tables(cursor)
            return
        for table, (columns, pk, indexes, _) in TABLES.items():
            for statement in table_ddl(table, columns, pk, indexes):
                cursor.execute(statement)
        cursor.execute("CREATE TABLE IF NOT EXISTS view_tracking (view TEXT PRIMARY KEY, position BIGINT NOT NULL)")
        # The rows exist from the start so a projector can lock them (SELECT ... FOR UPDATE).
        cursor.executemany("INSERT INTO view_tracking (view, position) VALUES (?, 0) ON CONFLICT (view) DO NOTHING",
                           [(view,) for view in VIEWS])

    def tracking_positions(self) -> dict[str, int]:
        rows = dict(self.run(lambda c: c.execute("SELECT view, position FROM view_tracking").fetchall()))
        return {view: rows.get(view, 0) for view in VIEWS}

    def lock_tracking(self, cursor: _Cursor) -> dict[str, int]:
        """Lock the views' tracking rows until the transaction ends; their positions."""
        rows = dict(cursor.execute(
            "SELECT view, position FROM view_tracking ORDER BY view FOR UPDATE").fetchall())
        return {view: rows.get(view, 0) for view in VIEWS}

    def set_tracking(self, cursor: _Cursor, view: str, position: int) -> None:
        cursor.execute(
            "INSERT INTO view_tracking (view, position) VALUES (?, ?)"
            " ON CONFLICT (view) DO UPDATE SET position = excluded.position",
            (view, position),
        )

    def drop(self, views: tuple[str, ...]) -> None:
        """Empty `views` and reset their positions, in one transaction under the projection lock."""
        with self.transaction() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(self.schema),))
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
            self._events)
        row = self.run(lambda c: c.execute(statement, (originator_id, version)).fetchone())
        if row is None:
            raise LookupError(f"no stored event {originator_id} v{version}")
        return int(row[0])

    def head(self) -> int:
        statement: Composable = SQL("SELECT MAX(notification_id) FROM {}").format(self._events)
        row = self.run(lambda c: c.execute(statement).fetchone())
        return int(row[0] or 0)

    def key_versions(self, originator_id: UUID, key: str) -> list[int]:
        statement = SQL("SELECT originator_version FROM {} WHERE originator_id = %s AND key = %s"
                        " ORDER BY originator_version").format(self._keys)
        rows = self.run(lambda c: c.execute(statement, (originator_id, key)).fetchall())
        return [int(row[0]) for row in rows]

    def keys_missing(self) -> bool:
        def check(connection: psycopg.Connection[Any]) -> bool:
            if connection.execute(SQL("SELECT 1 FROM {} LIMIT 1").format(self._keys)).fetchone() is not None:
                return False
            return connection.execute(SQL(
                "SELECT 1 FROM {} WHERE topic LIKE '%%:Account.Spend%%' OR topic LIKE '%%:Run.StepsRecorded'"
                " LIMIT 1").format(self._events)).fetchone() is not None

        return bool(self.run(check))

    def insert_keys(self, rows: list[tuple[UUID, str, int]]) -> None:
        statement = SQL("INSERT INTO {} (originator_id, key, originator_version) VALUES (%s, %s, %s)"
                        " ON CONFLICT DO NOTHING").format(self._keys)

        def insert(connection: psycopg.Connection[Any]) -> None:
            with connection.transaction(), connection.cursor() as cursor:
                cursor.executemany(statement, rows)

        self.run(insert)

    def close(self) -> None:
        self.pool.close()


class PostgresProjector(Projector):
    """The projector of ledger.views.projector, exactly once across processes and woken by LISTEN.
    `start()` projects in the background; `follow()` instead only tracks what other processes
    (workers, other servers) have projected."""

    def __init__(self, app: Any, database: PostgresStorage, *, poll_s: float = FALLBACK_POLL_S) -> None:
        super().__init__(app, database, poll_s=poll_s)
        self.database: PostgresStorage = database
        self._listener: threading.Thread | None = None
        self.following = False

    def follow(self) -> None:
        """Run in the background without projecting: adopt the positions other processes
        commit (woken by their NOTIFY on the views channel, else by the fallback poll)."""
        if self._thread is None:
            self.following = True
        self.start()

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._listener = threading.Thread(target=self._listen, name="trainledger-listen", daemon=True)
            self._listener.start()
        super().start()

    def stop(self) -> None:
        super().stop()
        if self._listener is not None:
            self._listener.join(timeout=10)
            self._listener = None

    def _listen(self) -> None:
        """Wake the projector on every NOTIFY of the events' channel; reconnect after outages."""
        channel = self.database.views_channel if self.following else self.database.channel
        statement = SQL("LISTEN {}").format(Identifier(channel))
        kwargs = {**self.database.connect_kwargs, "autocommit": True,
                  "connect_timeout": max(1, int(self.database.timeout_s)),
                  # A server that vanished without closing the socket is noticed within seconds.
                  "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3}
        delay = RETRY_MIN_S
        failing = False
        while not self._stop.is_set():
            try:
                with psycopg.connect(**kwargs) as connection:
                    connection.execute(statement)
                    if failing:
                        log.info("listening on %s again", channel)
                    failing, delay = False, RETRY_MIN_S
                    self._wake.set()  # Inserts may have been missed while not listening.
                    while not self._stop.is_set():
                        for _ in connection.notifies(timeout=LISTEN_TIMEOUT_S, stop_after=1):
                            self._wake.set()
            except psycopg.Error as error:
                if not failing:
                    log.warning("lost LISTEN %s (%s); reconnecting", channel, error)
                failing = True
                self._stop.wait(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    def _run(self) -> None:
        delay = RETRY_MIN_S
        while not self._stop.is_set():
            self._sleep()
            try:
                if self.following:
                    self._publish(self.database.tracking_positions())
                else:
                    self.catch_up()
            except ProjectionFailed as failure:
                self._fail(failure)
                return
            except Exception as error:  # Keep projecting after a transient storage failure.
                if isinstance(error, self.database.outage_errors + (UnavailableError,)):
                    if self.error is None:
                        log.warning("%s paused, storage is unavailable (%s); retrying",
                                    "following projections" if self.following else "projection", error)
                else:
                    log.exception("projection failed; retrying")
                self.error = error
                self._stop.wait(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                self._wake.set()
            else:
                if self.error is not None:
                    log.info("%s resumed", "following projections" if self.following else "projection")
                self.error = None
                delay = RETRY_MIN_S

    def _chunk_applied(self, cursor: Any, last: int) -> None:
        # Delivered on commit: followers adopt the new positions at once.
        cursor.execute("SELECT pg_notify(?, ?)", (self.database.views_channel, str(last)))



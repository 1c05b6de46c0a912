"""eventsourcing's PostgreSQL recorders and factory, bounded and with the keys index.

The library retries each recorder call ten times, each waiting the pool's full timeout; ours go
through the one retry rule of ledger.storage.postgres.connections instead, so a command answers
Unavailable within about one connect timeout and the next one after a restart succeeds. The
events' recorder creates its schema under an advisory lock (several processes may start at once),
writes the keys index (ledger.storage.keys) and the seals of the hash chain (ledger.storage.chain)
in the transaction of the events, and NOTIFYs a channel per schema.

An insert is one transaction of two round trips, in pipeline mode: BEGIN, the lock timeout with
the notify, the table lock, the keys, the last seal (with whether an event lacks one) and the
events (binary arrays, one statement) go out together;
the seals of the new events and the COMMIT follow once their positions are back, and the write
returns once the COMMIT's answer (the transaction on disk) is read. Event states are
compressed with lz4 where the server has it (cheaper than pglz to write and to read).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast
from uuid import UUID

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError, ProgrammingError, StoredEvent
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresDatastore,
    PostgresFactory,
)
from psycopg.pq import TransactionStatus
from psycopg.sql import SQL, Composable, Identifier, Literal

from ledger.storage.chain import GENESIS, seal_rows, unsealed_refusal
from ledger.storage.postgres.connections import (
    RECONNECT_TIMEOUT_S,
    check_reachable,
    connect_kwargs,
    retrying,
    schema_lock,
)

__all__ = ["AggregateRecorder", "ApplicationRecorder", "Factory", "keys_table_name", "seals_table_name"]

R = TypeVar("R")
# A row of the keys index: (aggregate id, key, aggregate version).
Key = tuple[Any, str, int]
# Between tries of a recorder call, 0.05 s times the attempt number.
RECORDER_PAUSE_S = 0.05


def keys_table_name(events_table_name: str) -> str:
    """The keys index of an events table (ledger.storage.keys)."""
    return f"{events_table_name}_keys"


def seals_table_name(events_table_name: str) -> str:
    """The seals of an events table (ledger.storage.chain)."""
    return f"{events_table_name}_seals"


def _event_columns(stored_events: Sequence[StoredEvent]) -> tuple[list[Any], list[int], list[str], list[bytes]]:
    """The events as one array per column of the events table, for the one-statement insert."""
    return (
        [e.originator_id for e in stored_events],
        [e.originator_version for e in stored_events],
        [e.topic for e in stored_events],
        [e.state for e in stored_events],
    )


def bounded(method: Callable[..., R]) -> Callable[..., R]:
    """The recorder `method` without the library's own retry, under the one retry rule."""
    inner: Callable[..., R] = getattr(method, "__wrapped__", method)

    @functools.wraps(inner)
    def call(self: PostgresAggregateRecorder, *args: Any, **kwargs: Any) -> R:
        return retrying(
            lambda: inner(self, *args, **kwargs),
            errors=(InterfaceError, OperationalError),
            drop_dead=self.datastore.pool.check,
            pause_s=RECORDER_PAUSE_S,
        )

    return call


# A transaction left open or aborted by a write that failed (not a connection that was lost).
_OPEN = (TransactionStatus.INTRANS, TransactionStatus.INERROR)

# Backend pids remembered as this process's own (forgetting one only costs a wake).
OWN_BACKENDS_MAX = 256


class AggregateRecorder(PostgresAggregateRecorder):
    """The snapshots' recorder."""

    insert_events = bounded(PostgresAggregateRecorder.insert_events)
    select_events = bounded(PostgresAggregateRecorder.select_events)

    def create_table(self) -> None:
        with schema_lock(self.datastore):
            super().create_table()


class ApplicationRecorder(PostgresApplicationRecorder):
    """The events' recorder: creates its schema, NOTIFYs a channel named after schema and table,
    and seals the events it inserts. The library locks the events table (EXCLUSIVE) before it
    inserts, so inserting transactions run one at a time and the last seal read after the insert
    is the one the new events follow."""

    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        if datastore.schema != "public":
            # Channels are per database, not per schema: keep other schemas' inserts out.
            self.channel_name = f"{datastore.schema}_{self.channel_name}"[: self.MAX_IDENTIFIER_LEN]
        # The statements of an insert, rendered once (prepared on the server on first use).
        events = SQL("{}.{}").format(Identifier(datastore.schema), Identifier(self.events_table_name))
        self._insert_sql: list[bytes] = []
        self._events_sql = b""
        self._keys_sql = b""
        self._last_seal_sql = b""
        self._seals_sql = b""
        self._events_composable = events
        #: The backend pids of the connections this recorder inserted on: the NOTIFYs they sent
        #: are this process's own (PostgresProjector is not woken by them).
        self.own_backends: set[int] = set()

    def _render(self, connection: psycopg.Connection[Any]) -> None:
        """The insert's statements as bytes (rendering a Composable costs on every call)."""
        id_type = Identifier(self.datastore.originator_id_type)
        # SET LOCAL and NOTIFY as one statement (set_config(..., true) is SET LOCAL; NOTIFY's
        # payload is empty), before the lock as the timeout must be.
        self._insert_sql = [
            statement.as_bytes(connection)
            for statement in (
                SQL("SELECT set_config('lock_timeout', {}, true), pg_notify({}, '')").format(
                    Literal(f"{self.datastore.lock_timeout}s"), Literal(self.channel_name)
                ),
                SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(self._events_composable),
            )
        ]
        self._events_sql = (
            SQL(
                "INSERT INTO {} (originator_id, originator_version, topic, state)"
                " SELECT * FROM unnest(%b::{}[], %b::bigint[], %b::text[], %b::bytea[])"
                " RETURNING notification_id"
            )
            .format(self._events_composable, id_type)
            .as_bytes(connection)
        )
        self._keys_sql = (
            SQL(
                "INSERT INTO {} (originator_id, key, originator_version)"
                " SELECT * FROM unnest(%b::{}[], %b::text[], %b::bigint[]) ON CONFLICT DO NOTHING"
            )
            .format(self.keys_table, id_type)
            .as_bytes(connection)
        )
        # The last seal (position NULL before any) and whether an event after it lacks one.
        self._last_seal_sql = (
            SQL(
                "SELECT s.position, s.digest, EXISTS (SELECT 1 FROM {} WHERE notification_id > COALESCE(s.position, 0))"
                " AS unsealed FROM (SELECT 1) AS one"
                " LEFT JOIN (SELECT position, digest FROM {} ORDER BY position DESC LIMIT 1) AS s ON true"
            )
            .format(self._events_composable, self.seals_table)
            .as_bytes(connection)
        )
        self._seals_sql = (
            SQL("INSERT INTO {} (position, digest) SELECT * FROM unnest(%b::bigint[], %b::bytea[])")
            .format(self.seals_table)
            .as_bytes(connection)
        )

    def _insert(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        """Insert and seal `stored_events`, and index their `keys`, in one transaction; their
        positions. The table lock (EXCLUSIVE, taken first) runs inserting transactions one at a
        time, so the last seal read after it is the one the new events follow."""
        if not stored_events:
            return None
        keys: list[Key] = kwargs.get("keys") or []
        with self.datastore.get_connection() as connection:
            if not self._insert_sql:
                self._render(connection)
            if len(self.own_backends) >= OWN_BACKENDS_MAX:
                self.own_backends.clear()  # Pools replace their connections: forget the old ones.
            self.own_backends.add(connection.info.backend_pid)
            # The pool's connections are in autocommit mode (eventsourcing's): BEGIN and COMMIT
            # are statements of the pipeline's two round trips (psycopg's transaction block
            # would wait for an answer to each).
            positions, failed = self._insert_sealed(connection, stored_events, keys)
            if failed is not None and connection.info.transaction_status in _OPEN:
                connection.rollback()  # Nothing of the write is stored.
            if failed is not None:
                raise failed
        return positions

    def _insert_sealed(
        self, connection: psycopg.Connection[Any], stored_events: Sequence[StoredEvent], keys: list[Key]
    ) -> tuple[list[int], Exception | None]:
        """The write's two round trips, in pipeline mode: BEGIN, the table lock, the notify, the
        keys, the last seal and the events; then the new events' seals and COMMIT, whose answer
        (the commit on disk) is read before this returns. The positions, or what failed (the
        transaction is then left open or aborted, for the caller to roll back)."""
        positions: list[int] = []
        try:
            with (
                connection.pipeline() as pipeline,
                connection.cursor() as cursor,
                connection.cursor() as inserted,
                connection.cursor() as last,
            ):
                cursor.execute(b"BEGIN")
                for statement in self._insert_sql:
                    cursor.execute(statement, prepare=True)
                if keys:
                    cursor.execute(
                        self._keys_sql, ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]), prepare=True
                    )
                # Under the table lock: the seal the new events follow, and whether any event
                # after it lacks a seal (a log that must be sealed before a write).
                last.execute(self._last_seal_sql, prepare=True)
                inserted.execute(self._events_sql, _event_columns(stored_events), prepare=True)
                # The first round trip; a clash raises here. The insert goes last and a sync ends
                # the round trip, so nothing queued after a clash fails again later (as "pipeline
                # aborted") in place of it.
                pipeline.sync()
                positions = [row["notification_id"] for row in inserted.fetchall()]
                found = last.fetchone() or {}  # The last seal (NULL before any), and whether unsealed.
                if len(positions) != len(stored_events):
                    raise ProgrammingError(f"inserted {len(stored_events)} events, got {len(positions)} positions")
                position = found.get("position")
                last_sealed = 0 if position is None else int(position)
                if found.get("unsealed"):  # Events past the last seal, before these.
                    return positions, unsealed_refusal(last_sealed)
                rows = sorted(
                    (position, cast(UUID, e.originator_id).bytes, e.originator_version, e.topic, e.state)
                    for position, e in zip(positions, stored_events, strict=True)
                )
                seals = seal_rows(GENESIS if position is None else bytes(found["digest"]), rows)
                cursor.execute(self._seals_sql, ([s[0] for s in seals], [s[1] for s in seals]), prepare=True)
                cursor.execute(b"COMMIT")
                # Leaving the pipeline syncs and reads every answer: the second round trip.
        except Exception as error:
            return positions, error
        return positions, None

    insert_events = bounded(_insert)
    select_events = bounded(PostgresApplicationRecorder.select_events)
    select_notifications = bounded(PostgresApplicationRecorder.select_notifications)
    max_notification_id = bounded(PostgresApplicationRecorder.max_notification_id)

    @property
    def keys_table(self) -> Composable:
        table = keys_table_name(self.events_table_name)
        return SQL("{}.{}").format(Identifier(self.datastore.schema), Identifier(table))

    @property
    def seals_table(self) -> Composable:
        table = seals_table_name(self.events_table_name)
        return SQL("{}.{}").format(Identifier(self.datastore.schema), Identifier(table))

    def create_table(self) -> None:
        with schema_lock(self.datastore):
            super().create_table()
            with self.datastore.get_connection() as connection:
                connection.execute(
                    SQL(
                        "CREATE TABLE IF NOT EXISTS {} (originator_id UUID, key TEXT,"
                        " originator_version BIGINT, PRIMARY KEY (originator_id, key,"
                        " originator_version))"
                    ).format(self.keys_table)
                )
                connection.execute(
                    SQL("CREATE TABLE IF NOT EXISTS {} (position BIGINT PRIMARY KEY, digest BYTEA NOT NULL)").format(
                        self.seals_table
                    )
                )
                self._compress_states(connection)

    def _compress_states(self, connection: psycopg.Connection[Any]) -> None:
        """States stored from now on are compressed with lz4 (PostgreSQL 14 and later, built
        with lz4); rows already stored keep theirs. Left as it is where lz4 is missing."""
        if connection.info.server_version < 140000:
            return
        table = SQL("{}.{}").format(Identifier(self.datastore.schema), Identifier(self.events_table_name))
        row = connection.execute(
            SQL("SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'state'"),
            (table.as_string(connection),),
        ).fetchone()
        if row is None or row["attcompression"] == "l":
            return
        try:
            with connection.transaction():
                connection.execute(SQL("ALTER TABLE {} ALTER COLUMN state SET COMPRESSION lz4").format(table))
        except psycopg.errors.FeatureNotSupported:
            pass  # A server built without lz4 keeps pglz.


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
        check_reachable(connect_kwargs(self.datastore), pool.timeout)

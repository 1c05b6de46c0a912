"""eventsourcing's PostgreSQL recorders and factory, bounded and with the keys index.

The library retries each recorder call ten times, each waiting the pool's full timeout; ours go
through the one retry rule of ledger.storage.postgres.connections instead, so a command answers
Unavailable within about one connect timeout and the next one after a restart succeeds. The
events' recorder creates its schema under an advisory lock (several processes may start at once),
writes the keys index (ledger.storage.keys) and the seals of the hash chain (ledger.storage.chain)
in the transaction of the events, and NOTIFYs a channel per schema.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresDatastore,
    PostgresFactory,
)
from psycopg.sql import SQL, Composable, Identifier

from ledger.storage.chain import GENESIS, seal_rows
from ledger.storage.postgres.connections import (
    RECONNECT_TIMEOUT_S,
    check_reachable,
    connect_kwargs,
    retrying,
    schema_lock,
)

__all__ = ["AggregateRecorder", "ApplicationRecorder", "Factory", "keys_table_name", "seals_table_name"]

R = TypeVar("R")
# Between tries of a recorder call, 0.05 s times the attempt number.
RECORDER_PAUSE_S = 0.05


def keys_table_name(events_table_name: str) -> str:
    """The keys index of an events table (ledger.storage.keys)."""
    return f"{events_table_name}_keys"


def seals_table_name(events_table_name: str) -> str:
    """The seals of an events table (ledger.storage.chain)."""
    return f"{events_table_name}_seals"


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

    insert_events = bounded(PostgresApplicationRecorder.insert_events)
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

    def _insert_events(self, curs: Any, stored_events: Any, **kwargs: Any) -> None:
        """The keys index (ledger.storage.keys) is written in the transaction of the events it indexes."""
        super()._insert_events(curs, stored_events, **kwargs)
        keys = kwargs.get("keys") or []
        if keys:
            curs.executemany(
                SQL(
                    "INSERT INTO {} (originator_id, key, originator_version) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
                ).format(self.keys_table),
                keys,
            )

    def _fetch_ids_after_insert_events(self, curs: Any, stored_events: Any, **kwargs: Any) -> Any:
        """Seal the inserted events (ledger.storage.chain) once their positions are known, still in
        their transaction and under the table lock the library took before inserting them."""
        positions = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        if not positions:
            return positions
        curs.execute(SQL("SELECT digest FROM {} ORDER BY position DESC LIMIT 1").format(self.seals_table))
        last = curs.fetchone()
        rows = sorted(
            (position, event.originator_id.bytes, event.originator_version, event.topic, event.state)
            for position, event in zip(positions, stored_events, strict=True)
        )
        seals = seal_rows(GENESIS if last is None else bytes(last["digest"]), rows)
        curs.executemany(SQL("INSERT INTO {} (position, digest) VALUES (%s, %s)").format(self.seals_table), seals)
        return positions


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

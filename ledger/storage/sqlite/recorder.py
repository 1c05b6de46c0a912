"""SQLiteRecorder: eventsourcing's SQLite recorder plus our tables beside its own, the keys index
(ledger.storage.keys) and the seals of the hash chain (ledger.storage.chain), both written in the
events' transaction."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor

from ledger.storage.base import KeyRow
from ledger.storage.chain import GENESIS, seal_rows, unsealed_refusal

__all__ = ["SQLiteRecorder"]

KEYS_TABLE = "stored_keys"
SEALS_TABLE = "stored_seals"
LAST_SEAL = f"SELECT position, digest FROM {SEALS_TABLE} ORDER BY position DESC LIMIT 1"
HEAD = "SELECT MAX(rowid) FROM stored_events"
POSITION_OF = "SELECT rowid FROM stored_events WHERE originator_id = ? AND originator_version = ?"
INSERT_SEALS = f"INSERT INTO {SEALS_TABLE} (position, digest) VALUES (?, ?)"


class SQLiteRecorder(SQLiteApplicationRecorder):
    """eventsourcing's SQLite recorder that also writes the keys index (ledger.storage.keys) in the
    transaction of the events: `save(..., keys=[(aggregate id, key, version), ...])`, and seals the
    events it inserts (ledger.storage.chain). SQLite has one writer at a time, so the last seal read
    inside the transaction is the one the new events follow."""

    def construct_create_table_statements(self) -> list[str]:
        return [*super().construct_create_table_statements(), *self.ledger_tables()]

    @staticmethod
    def ledger_tables() -> list[str]:
        """The statements that make our tables beside the library's: the keys index and the seals."""
        return [
            f"CREATE TABLE IF NOT EXISTS {KEYS_TABLE} (originator_id TEXT, key TEXT, originator_version INTEGER,"
            " PRIMARY KEY (originator_id, key, originator_version)) WITHOUT ROWID",
            f"CREATE TABLE IF NOT EXISTS {SEALS_TABLE} (position INTEGER PRIMARY KEY, digest BLOB NOT NULL)",
        ]

    def insert_events(self, stored_events: Any, **kwargs: Any) -> Any:
        """eventsourcing's, but waiting for this process's writer slot as long as SQLite's lock
        timeout, not the pool's shorter wait for a connection: the views' transaction holds the
        slot while it writes (SQLiteStorage.transaction), as it held SQLite's lock before."""
        pool = self.datastore.pool
        connection = pool.get_connection(timeout=pool.lock_timeout or None, is_writer=True)
        try:
            with connection.transaction(commit=True) as cursor:
                return self._insert_events(cursor, stored_events, **kwargs)
        finally:
            pool.put_connection(connection)

    def _insert_events(self, c: SQLiteCursor, stored_events: Any, **kwargs: Any) -> Any:
        if len(stored_events) < 2:
            positions = super()._insert_events(c, stored_events, **kwargs)
            assert positions is not None  # The application recorder returns the rowids it inserted.
        else:
            # A group's events in one statement, not one each (each one releases and takes back
            # Python's lock). A new row's rowid is one past the largest, and this transaction
            # holds the write lock: the group's rowids run up to the head read after the insert,
            # as the first event's confirms. (The insert comes first: a read first would start a
            # snapshot that another process's commit could make unable to write.)
            c.executemany(
                self.insert_events_statement,
                [(s.originator_id.hex, s.originator_version, s.topic, s.state) for s in stored_events],
            )
            c.execute(HEAD)
            last = c.fetchone()[0]
            positions = list(range(last - len(stored_events) + 1, last + 1))
            first = stored_events[0]
            c.execute(POSITION_OF, (first.originator_id.hex, first.originator_version))
            if c.fetchone()[0] != positions[0]:
                raise IntegrityError(f"the log's rowids of {len(stored_events)} events do not run up to {last}")
        keys: list[KeyRow] = kwargs.get("keys") or []
        if keys:
            c.executemany(
                f"INSERT OR IGNORE INTO {KEYS_TABLE} (originator_id, key, originator_version) VALUES (?, ?, ?)",
                _key_rows(keys),
            )
        if not positions:
            return positions  # Nothing inserted, nothing to seal.
        c.execute(LAST_SEAL)
        last = c.fetchone()
        last_sealed = 0 if last is None else last[0]
        if last_sealed != positions[0] - 1:  # Rowids run on with one writer: events before lack seals.
            raise unsealed_refusal(last_sealed)  # The transaction rolls back: nothing is stored.
        rows = [
            (position, event.originator_id.bytes, event.originator_version, event.topic, event.state)
            for position, event in zip(positions, stored_events, strict=True)
        ]
        c.executemany(INSERT_SEALS, seal_rows(GENESIS if last is None else last[1], rows))
        return positions


def _key_rows(keys: list[KeyRow]) -> list[tuple[str, str, int]]:
    """The rows of the keys index, each aggregate's id spelt once (they come sorted: an event's
    keys, a bill's thousands of lines, follow one another under one id)."""
    rows: list[tuple[str, str, int]] = []
    last: UUID | None = None
    text = ""
    for uuid, key, version in keys:
        if uuid is not last:
            last, text = uuid, uuid.hex
        rows.append((text, key, version))
    return rows

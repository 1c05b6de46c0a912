"""SQLiteStorage: the views and their tracking in the events' SQLite file (WAL); ledger.storage.base
says what a Storage is."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import Notification

from ledger.storage.base import KeyRow, Storage, ViewRead, read_only, tracking_upsert
from ledger.storage.chain import GENESIS, ChainRow, seal_rows
from ledger.storage.sqlite.files import file_path, read_only_uri
from ledger.storage.sqlite.recorder import INSERT_SEALS, KEYS_TABLE, LAST_SEAL, SEALS_TABLE, SQLiteRecorder
from ledger.storage.sqlite.slot import views_transaction
from ledger.views.queries import ViewReader
from ledger.views.schema import TABLES, VIEWS

__all__ = ["SQLiteStorage"]

# Keys looked up in one query (SQLite binds at most 32,766 parameters).
KEYS_PER_QUERY = 900
SEAL_PAGE_EVENTS = 1000
DIGESTS_PER_QUERY = 500
EVENTS_AFTER = (
    "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events"
    " WHERE rowid > ? ORDER BY rowid LIMIT ?"
)
EVENTS_BETWEEN = (
    "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events"
    " WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?"
)
SEALS_BETWEEN = (
    f"SELECT position, digest FROM {SEALS_TABLE} WHERE position > ? AND position <= ? ORDER BY position LIMIT ?"
)

SQLITE_TYPES = {int: int, float: float, str: str, bytes: bytes}
# The views' writer checkpoints the write-ahead log once it holds this many pages (the events'
# connections at SQLite's default, 1,000): the projector, committing after the events it follows,
# reaches the mark first, so the copy into the file and its sync are off the appenders' commits.
VIEWS_CHECKPOINT_PAGES = 250


def _read_only_connection(path: str) -> sqlite3.Connection:
    """A connection that cannot write the file (a ledger opened to check it: verify). A table a
    file written by an older version lacks (the seals, the keys index) reads as an empty one."""
    connection = sqlite3.connect(
        read_only_uri(path),
        uri=True,
        check_same_thread=False,
        isolation_level=None,
        timeout=30,
    )
    present = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for statement in SQLiteRecorder.ledger_tables():
        table = statement.split()[5]
        if table not in present:
            connection.execute(statement.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))
    return connection


class SQLiteStorage(Storage):
    """Events (eventsourcing's tables) and views (ours, prefixed view_) in one SQLite file."""

    # The views' own connections raise sqlite3's errors (a locked or full database, I/O).
    outage_errors = (*Storage.outage_errors, sqlite3.OperationalError)

    def __init__(self, app: Application[UUID]) -> None:
        self.app = app
        path = app.env.get("SQLITE_DBNAME")
        if path is None:  # eventsourcing's SQLite factory refuses such settings before this.
            raise ValueError("SQLite settings name no file (SQLITE_DBNAME)")
        self.path: str = file_path(path)
        self.read_only = read_only(app)
        if self.read_only:
            # eventsourcing's connections (read_only_uri's) would switch a rollback journal to a
            # write-ahead log on first use: a write. The file keeps the journal it has.
            app.recorder.datastore.pool.is_journal_mode_wal = True  # type: ignore[attr-defined]
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writer = self._connect()
        if not self.read_only:
            # View rows can be rebuilt from the log, and their tracking positions commit with them,
            # so the projector's transactions need no fsync of their own.
            self._writer.execute("PRAGMA synchronous=NORMAL")
            self._writer.execute(f"PRAGMA wal_autocheckpoint={VIEWS_CHECKPOINT_PAGES}")
            self.create_tables()
        self.views = ViewReader(self._reader)

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            connection = _read_only_connection(self.path)
        else:
            connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            connection.execute("PRAGMA journal_mode=WAL")
        with self._lock:
            self._connections.append(connection)
        return connection

    def _reader(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._connect()
        return connection

    def _schema_whole(self) -> bool:
        """Whether every view table and every declared index (by its columns) is in the file."""
        connection = self._writer
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {*TABLES, "view_tracking"} <= tables:
            return False
        for table, (_, _, indexes, _) in TABLES.items():
            if not indexes:
                continue
            present = {
                tuple(column for _, _, column in connection.execute(f"PRAGMA index_info([{name}])"))
                for _, name, *_ in connection.execute(f"PRAGMA index_list([{table}])")
            }
            if not set(indexes) <= present:
                return False
        return True

    def create_tables(self) -> None:
        if self._schema_whole():
            # Every open after the first: sqlite_utils is not loaded (it imports pandas and numpy
            # when they are installed, over a second for every command that opens a file).
            return
        import sqlite_utils

        db = sqlite_utils.Database(self._writer)
        for table, (columns, pk, indexes, _) in TABLES.items():
            if not db.table(table).exists():
                db.table(table).create({name: SQLITE_TYPES[kind] for name, kind in columns.items()}, pk=pk)
            # Indexes added since a file was made are added to it when it is opened.
            for index in indexes:
                db.table(table).create_index(index, if_not_exists=True)
        if not db.table("view_tracking").exists():
            db.table("view_tracking").create({"view": str, "position": int}, pk="view")

    def tracking_positions(self) -> dict[str, int]:
        rows = dict(self._reader().execute("SELECT view, position FROM view_tracking").fetchall())
        return {view: rows.get(view, 0) for view in VIEWS}

    def lock_tracking(self, cursor: sqlite3.Cursor) -> dict[str, int]:
        """The views' positions, read inside the caller's write transaction (BEGIN IMMEDIATE
        holds the database's write lock, so no other projector can move them meanwhile)."""
        rows = dict(cursor.execute("SELECT view, position FROM view_tracking").fetchall())
        return {view: rows.get(view, 0) for view in VIEWS}

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Cursor]:
        """A write transaction on the views' connection, holding this process's writer slot
        throughout (ledger.storage.sqlite.slot says how it is taken and why)."""
        with views_transaction(self.app.recorder.datastore.pool, self._writer) as cursor:  # type: ignore[attr-defined]
            yield cursor

    def set_tracking(self, cursor: sqlite3.Cursor, views: Sequence[str], position: int) -> None:
        """Move `views` to `position`: one statement for them all (a chunk moves every view)."""
        if views:
            cursor.execute(tracking_upsert(len(views)), [value for view in views for value in (view, position)])

    def drop(self, views: tuple[str, ...]) -> None:
        import sqlite_utils

        db = sqlite_utils.Database(self._writer)
        for table, (*_, owner) in TABLES.items():
            if owner in views or (owner == "" and set(views) == set(VIEWS)):
                db.table(table).drop(ignore=True)
        for view in views:
            self._writer.execute("DELETE FROM view_tracking WHERE view = ?", (view,))
        self.create_tables()

    def position_of(self, originator_id: UUID, version: int) -> int:
        row = (
            self._reader()
            .execute(
                "SELECT rowid FROM stored_events WHERE originator_id = ? AND originator_version = ?",
                (originator_id.hex, version),
            )
            .fetchone()
        )
        if row is None:
            raise LookupError(f"no stored event {originator_id} v{version}")
        return int(row[0])

    def head(self) -> int:
        row = self._reader().execute("SELECT MAX(rowid) FROM stored_events").fetchone()
        return int(row[0] or 0)

    def key_versions(self, originator_id: UUID, key: str) -> list[int]:
        rows = (
            self._reader()
            .execute(
                f"SELECT originator_version FROM {KEYS_TABLE} WHERE originator_id = ? AND key = ?"
                " ORDER BY originator_version",
                (originator_id.hex, key),
            )
            .fetchall()
        )
        return [int(row[0]) for row in rows]

    def latest_key_versions(self, originator_id: UUID, keys: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        reader = self._reader()
        for start in range(0, len(keys), KEYS_PER_QUERY):
            chunk = keys[start : start + KEYS_PER_QUERY]
            found.update(
                reader.execute(
                    f"SELECT key, MAX(originator_version) FROM {KEYS_TABLE} WHERE originator_id = ?"
                    f" AND key IN ({', '.join('?' * len(chunk))}) GROUP BY key",
                    (originator_id.hex, *chunk),
                ).fetchall()
            )
        return found

    def insert_keys(self, rows: list[KeyRow]) -> None:
        with self.transaction() as cursor:
            cursor.executemany(
                f"INSERT OR IGNORE INTO {KEYS_TABLE} (originator_id, key, originator_version) VALUES (?, ?, ?)",
                [(uuid.hex, key, version) for uuid, key, version in rows],
            )

    def keyed_event_counts(self, topics: Sequence[str]) -> tuple[dict[UUID, int], dict[UUID, int]]:
        reader = self._reader()
        marks = ",".join("?" * len(topics))
        logged = reader.execute(
            f"SELECT originator_id, COUNT(*) FROM stored_events WHERE topic IN ({marks}) GROUP BY originator_id",
            list(topics),
        ).fetchall()  # Counted before the index (Storage.reindex_keys says why).
        indexed = reader.execute(
            f"SELECT originator_id, COUNT(DISTINCT originator_version) FROM {KEYS_TABLE} GROUP BY originator_id"
        ).fetchall()
        return {UUID(a): int(n) for a, n in logged}, {UUID(a): int(n) for a, n in indexed}

    def indexed(self, rows: Sequence[KeyRow]) -> set[KeyRow]:
        found: set[KeyRow] = set()
        reader = self._reader()
        for start in range(0, len(rows), KEYS_PER_QUERY // 3):
            part = {(a.hex, k, v): (a, k, v) for a, k, v in rows[start : start + KEYS_PER_QUERY // 3]}
            marks = ", ".join(["(?, ?, ?)"] * len(part))
            found.update(
                part[row]
                for row in reader.execute(
                    f"SELECT originator_id, key, originator_version FROM {KEYS_TABLE}"
                    f" WHERE (originator_id, key, originator_version) IN (VALUES {marks})",
                    [value for row in part for value in row],
                )
            )
        return found

    def keys_count(self) -> int:
        return int(self._reader().execute(f"SELECT COUNT(*) FROM {KEYS_TABLE}").fetchone()[0])

    def key_rows(self, after: KeyRow | None, limit: int) -> list[KeyRow]:
        where, params = "", []
        if after is not None:
            where = " WHERE (originator_id, key, originator_version) > (?, ?, ?)"
            params = [after[0].hex, after[1], after[2]]
        rows = self._reader().execute(
            f"SELECT originator_id, key, originator_version FROM {KEYS_TABLE}{where}"
            " ORDER BY originator_id, key, originator_version LIMIT ?",
            [*params, limit],
        )
        return [(UUID(a), k, int(v)) for a, k, v in rows]

    # The hash chain (ledger.storage.chain).

    def seals_missing(self) -> bool:
        reader = self._reader()
        if reader.execute(f"SELECT 1 FROM {SEALS_TABLE} LIMIT 1").fetchone() is not None:
            return False
        return reader.execute("SELECT 1 FROM stored_events LIMIT 1").fetchone() is not None

    def seal_log(self) -> int:
        with self.transaction() as cursor:  # BEGIN IMMEDIATE: no other writer meanwhile.
            if cursor.execute(LAST_SEAL).fetchone() is not None:
                return 0  # Another process sealed it first.
            after, previous, sealed = 0, GENESIS, 0
            while True:
                rows = cursor.execute(EVENTS_AFTER, (after, SEAL_PAGE_EVENTS)).fetchall()
                if not rows:
                    return sealed
                seals = seal_rows(previous, [(r[0], bytes.fromhex(r[1]), r[2], r[3], r[4]) for r in rows])
                cursor.executemany(INSERT_SEALS, seals)
                (after, previous), sealed = seals[-1], sealed + len(seals)

    def last_seal(self) -> tuple[int, bytes]:
        row = self._reader().execute(LAST_SEAL).fetchone()
        return (0, GENESIS) if row is None else (int(row[0]), bytes(row[1]))

    def chain_page(self, after: int, stop: int, limit: int) -> tuple[list[ChainRow], list[tuple[int, bytes]]]:
        reader = self._reader()
        events = [
            (r[0], bytes.fromhex(r[1]), r[2], r[3], r[4]) for r in reader.execute(EVENTS_BETWEEN, (after, stop, limit))
        ]
        return events, reader.execute(SEALS_BETWEEN, (after, stop, limit)).fetchall()

    def digests(self, positions: Sequence[int]) -> dict[int, bytes]:
        found: dict[int, bytes] = {}
        for start in range(0, len(positions), DIGESTS_PER_QUERY):
            part = positions[start : start + DIGESTS_PER_QUERY]
            sql = f"SELECT position, digest FROM {SEALS_TABLE} WHERE position IN ({','.join('?' * len(part))})"
            found.update(self._reader().execute(sql, part).fetchall())
        return found

    def snapshot_ids(self) -> list[UUID]:
        if self.app.snapshots is None:
            return []
        table = self.app.snapshots.recorder.events_table_name  # type: ignore[attr-defined]
        rows = self._reader().execute(f"SELECT DISTINCT originator_id FROM {table} ORDER BY originator_id")
        return [UUID(row[0]) for row in rows.fetchall()]

    @contextmanager
    def _view_read(self) -> Iterator[ViewRead]:
        connection = (
            _read_only_connection(self.path)
            if self.read_only
            else sqlite3.connect(self.path, isolation_level=None, timeout=30)
        )
        try:
            # One read transaction: every table is read as of one moment (WAL snapshots).
            connection.execute("BEGIN")
            yield lambda sql: connection.execute(sql)
            connection.execute("ROLLBACK")
        finally:
            connection.close()

    def view_read(self) -> AbstractContextManager[ViewRead]:
        return self._view_read()

    def select_notifications_of(
        self, originator_ids: list[UUID], start: int, limit: int, topics: list[str]
    ) -> list[Notification]:
        marks = ",".join("?" * len(originator_ids))
        sql = (
            f"SELECT rowid, originator_id, originator_version, topic, state FROM stored_events"
            f" WHERE originator_id IN ({marks}) AND rowid >= ?"
        )
        params: list[Any] = [u.hex for u in originator_ids] + [start]
        if topics:
            sql += f" AND topic IN ({','.join('?' * len(topics))})"
            params += topics
        rows = self._reader().execute(sql + " ORDER BY rowid LIMIT ?", (*params, limit)).fetchall()
        return [
            Notification(id=row[0], originator_id=UUID(row[1]), originator_version=row[2], topic=row[3], state=row[4])
            for row in rows
        ]

    def close(self) -> None:
        with self._lock:
            for connection in self._connections:
                try:
                    connection.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()

"""The writer slot of one process on a SQLite file: eventsourcing's pool lets one connection
write at a time (its writer connection), and the views' transaction takes the same slot, so the
projector and the log's writers of a process hand the file's write lock to each other in the
process, not through SQLite's busy handler, which sleeps 1, 2, 5, 10 ms and more between tries
however soon the lock is free. Other processes' writers still meet at SQLite's lock, and the slot
is let go while waiting for theirs (began_at_once)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import ConnectionUnavailableError

__all__ = ["views_transaction", "WRITER_WAIT_S"]

# Seconds the views' writer waits for this process's event writers to finish (SQLite's own
# lock timeout on these connections).
WRITER_WAIT_S = 30
# How the views' transaction yields the writer slot to the log's writers (writers_first): the
# pauses between its looks for a free slot (SQLite's busy handler's first ones), and how long it
# looks before it queues for the slot.
SLOT_PAUSES_S = (0.001, 0.002, 0.005, 0.01, 0.015)
SLOT_PATIENCE_S = 0.05


def began_at_once(cursor: sqlite3.Cursor) -> bool:
    """BEGIN IMMEDIATE without waiting: False, and no transaction, when SQLite's lock is held."""
    cursor.execute("PRAGMA busy_timeout=0")
    try:
        cursor.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
            raise
        return False
    finally:
        cursor.execute(f"PRAGMA busy_timeout={WRITER_WAIT_S * 1000}")
    return True


def writers_first(pool: Any) -> Any:
    """The writer slot for the views' transaction, yielding to the log's writers: taken at once
    when free; while a write holds it, looked for again after each of SLOT_PAUSES_S (the last one
    repeated) for up to SLOT_PATIENCE_S before queueing for it. A writer waiting behind the views'
    transaction is woken the moment it ends, but a stream of writes is not cut into by a views'
    transaction between each two of them: the projector gathers what they saved meanwhile into
    larger chunks, each costing less per event to project."""
    deadline = time.monotonic() + SLOT_PATIENCE_S
    tries = 0
    while True:
        try:
            return pool.get_connection(timeout=0, is_writer=True)
        except ConnectionUnavailableError:
            pause = SLOT_PAUSES_S[min(tries, len(SLOT_PAUSES_S) - 1)]
            if time.monotonic() + pause > deadline:
                return pool.get_connection(timeout=WRITER_WAIT_S, is_writer=True)
            time.sleep(pause)
            tries += 1


@contextmanager
def views_transaction(pool: Any, connection: sqlite3.Connection) -> Iterator[sqlite3.Cursor]:
    """A write transaction on `connection` (the views'), holding `pool`'s writer slot throughout
    unless another process holds SQLite's lock, which is then waited for without the slot, so
    that this process's appenders wait on SQLite's lock (its timeout), not on the pool's."""
    slot = writers_first(pool)
    try:
        cursor = connection.cursor()
        if not began_at_once(cursor):
            pool.put_connection(slot)
            slot = None
            cursor.execute("BEGIN IMMEDIATE")
        try:
            yield cursor
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        cursor.execute("COMMIT")
    finally:
        if slot is not None:
            pool.put_connection(slot)

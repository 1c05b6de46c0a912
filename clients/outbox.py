"""Where the recorder keeps batches between building them and their ack.

`MemoryOutbox` lives as long as the process. `SqliteOutbox` (one SQLite file in the outbox
directory) commits every batch with an fsync before it is sent and deletes it on its ack, so
batches not yet acked survive a ledger outage and a trainer crash. A batch belongs to one run and
one attempt; resending one that was acked but not yet deleted is safe, as the ledger answers an
identical batch as a duplicate. A batch the ledger refused for good stays, marked failed, for
inspection; it is never sent again.

A deferred open (the ledger was unreachable when the recorder opened) keeps its batches under a
pending attempt: run id PENDING_PREFIX + attempt id, attempt 0, with the run key, label and resume
point in `pending_opens`. Once the attempt is started they are adopted (rewritten with the real run
id and attempt number); a later process of the same run adopts and delivers what a process that
died before the ledger answered left behind.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from trainledger.v1 import common_pb2

__all__ = ["MemoryOutbox", "SqliteOutbox", "Entry", "FILE_NAME", "PENDING_PREFIX", "pending_run_id", "adopted"]

FILE_NAME = "trainledger-outbox.sqlite3"
PENDING_PREFIX = "pending:"
Entry = tuple[int, common_pb2.StepBatch, int]  # (sequence, batch, number of steps)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, attempt INTEGER NOT NULL,
    steps INTEGER NOT NULL, payload BLOB NOT NULL, state TEXT NOT NULL DEFAULT 'pending',
    reason TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS batches_pending ON batches (run_id, attempt, state, sequence);
CREATE TABLE IF NOT EXISTS attempts (
    attempt_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, owner TEXT NOT NULL, label TEXT NOT NULL,
    resume_from_step INTEGER, attempt INTEGER);
CREATE TABLE IF NOT EXISTS pending_opens (
    attempt_id TEXT PRIMARY KEY, run_key TEXT NOT NULL, owner TEXT NOT NULL, label TEXT NOT NULL,
    resume_from_step INTEGER);
"""


def pending_run_id(attempt_id: str) -> str:
    """The stand-in run id of an attempt not yet started (its batches wait under it)."""
    return PENDING_PREFIX + attempt_id


def adopted(batch: common_pb2.StepBatch, run_id: str, attempt: int) -> common_pb2.StepBatch:
    """A copy of a pending attempt's batch with the real run id and attempt number."""
    copy = common_pb2.StepBatch()
    copy.CopyFrom(batch)
    copy.run_id, copy.attempt = run_id, attempt
    return copy


class MemoryOutbox:
    """Pending batches in memory, for one run and attempt."""

    durable = False

    def __init__(self, run_id: str, attempt: int) -> None:
        self.run_id, self.attempt = run_id, attempt
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._next = 1
        self._lock = threading.Lock()

    def add(self, batch: common_pb2.StepBatch) -> int:
        with self._lock:
            sequence, self._next = self._next, self._next + 1
            self._entries[sequence] = (sequence, batch, len(batch.steps))
            return sequence

    def pending(self, after: int = 0, limit: int = 64) -> list[Entry]:
        with self._lock:
            return [entry for sequence, entry in self._entries.items() if sequence > after][:limit]

    def totals(self) -> tuple[int, int]:
        """(batches, steps) pending for this run and attempt."""
        with self._lock:
            return len(self._entries), sum(entry[2] for entry in self._entries.values())

    def done(self, sequence: int) -> None:
        with self._lock:
            self._entries.pop(sequence, None)

    def failed(self, sequence: int, reason: str) -> None:
        self.done(sequence)

    def adopt(self, run_id: str, attempt: int) -> None:
        """The pending attempt has started: its batches take the real run id and attempt."""
        with self._lock:
            self._entries = OrderedDict((sequence, (sequence, adopted(batch, run_id, attempt), steps))
                                        for sequence, batch, steps in self._entries.values())
            self.run_id, self.attempt = run_id, attempt

    def abandon(self, reason: str) -> None:
        """The pending attempt's start was refused for good: its batches will never be sent."""
        with self._lock:
            self._entries.clear()

    def close(self) -> None:
        pass


class SqliteOutbox(MemoryOutbox):
    """Pending batches in <directory>/trainledger-outbox.sqlite3, committed durably before sending."""

    durable = True

    def __init__(self, directory: str | os.PathLike[str], run_id: str = "", attempt: int = 0) -> None:
        os.makedirs(directory, exist_ok=True)
        self.run_id, self.attempt = run_id, attempt
        self._lock = threading.Lock()
        self._db = sqlite3.connect(os.path.join(directory, FILE_NAME), timeout=30.0,
                                   isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: every commit is fsynced before it returns, so a batch is on disk before it is sent.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def add(self, batch: common_pb2.StepBatch) -> int:
        with self._transaction() as db:
            cursor = db.execute("INSERT INTO batches (run_id, attempt, steps, payload) VALUES (?, ?, ?, ?)",
                                (self.run_id, self.attempt, len(batch.steps), batch.SerializeToString()))
            return int(cursor.lastrowid or 0)

    def pending(self, after: int = 0, limit: int = 64, *, attempt: int | None = None) -> list[Entry]:
        with self._lock:
            rows = self._db.execute(
                "SELECT sequence, payload, steps FROM batches WHERE run_id = ? AND attempt = ? AND state = 'pending'"
                " AND sequence > ? ORDER BY sequence LIMIT ?",
                (self.run_id, self.attempt if attempt is None else attempt, after, limit)).fetchall()
        return [(sequence, common_pb2.StepBatch.FromString(payload), steps) for sequence, payload, steps in rows]

    def totals(self) -> tuple[int, int]:
        with self._lock:
            row = self._db.execute("SELECT COUNT(*), TOTAL(steps) FROM batches WHERE run_id = ? AND attempt = ?"
                                   " AND state = 'pending'", (self.run_id, self.attempt)).fetchone()
        return int(row[0]), int(row[1])

    def pending_attempts(self) -> list[int]:
        """The run's other attempts that still have pending batches, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT attempt FROM batches WHERE run_id = ? AND state = 'pending'"
                                    " AND attempt != ? ORDER BY attempt", (self.run_id, self.attempt)).fetchall()
        return [row[0] for row in rows]

    def done(self, sequence: int) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM batches WHERE sequence = ?", (sequence,))

    def failed(self, sequence: int, reason: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE batches SET state = 'failed', reason = ? WHERE sequence = ?", (reason, sequence))

    def attempt_id(self, label: str, resume_from_step: int | None, make: str) -> str:
        """The attempt id to start the run's next attempt with, recorded before it is sent: the one
        this same process made earlier with the same label and resume point if its start was never
        confirmed (the answer was lost), else `make`. Another process never reuses an id: a new
        process is a new attempt."""
        owner = f"{socket.gethostname()}:{os.getpid()}"
        with self._transaction() as db:
            row = db.execute("SELECT attempt_id FROM attempts WHERE run_id = ? AND owner = ? AND label = ? AND"
                             " resume_from_step IS ? AND attempt IS NULL",
                             (self.run_id, owner, label, resume_from_step)).fetchone()
            if row:
                return str(row[0])
            db.execute("INSERT INTO attempts (attempt_id, run_id, owner, label, resume_from_step)"
                       " VALUES (?, ?, ?, ?, ?)", (make, self.run_id, owner, label, resume_from_step))
            return make

    def attempt_started(self, attempt_id: str, attempt: int) -> None:
        with self._transaction() as db:
            db.execute("UPDATE attempts SET attempt = ? WHERE attempt_id = ?", (attempt, attempt_id))
        self.attempt = attempt

    def add_pending_open(self, attempt_id: str, run_key: str, label: str, resume_from_step: int | None) -> None:
        """Note an attempt that will be started once the ledger answers; its batches are kept
        under pending_run_id(attempt_id), attempt 0."""
        owner = f"{socket.gethostname()}:{os.getpid()}"
        with self._transaction() as db:
            db.execute("INSERT OR IGNORE INTO pending_opens (attempt_id, run_key, owner, label, resume_from_step)"
                       " VALUES (?, ?, ?, ?, ?)", (attempt_id, run_key, owner, label, resume_from_step))

    def pending_opens(self, run_key: str, *, exclude: str = "") -> list[tuple[str, str, int | None]]:
        """(attempt_id, label, resume_from_step) of the run's attempts never started (their
        process died before the ledger answered), oldest first, leaving out `exclude`."""
        with self._lock:
            rows = self._db.execute("SELECT attempt_id, label, resume_from_step FROM pending_opens WHERE run_key = ?"
                                    " AND attempt_id != ? ORDER BY rowid", (run_key, exclude)).fetchall()
        return [(str(row[0]), str(row[1]), row[2]) for row in rows]

    def adopt_pending(self, attempt_id: str, run_id: str, attempt: int | None, reason: str = "") -> None:
        """The pending attempt `attempt_id` was started as `attempt` of `run_id`: rewrite its
        batches and record the attempt, in one transaction. With attempt None its start was
        refused for good: its batches are marked failed with `reason`."""
        placeholder = pending_run_id(attempt_id)
        with self._transaction() as db:
            row = db.execute("SELECT owner, label, resume_from_step FROM pending_opens WHERE attempt_id = ?",
                             (attempt_id,)).fetchone()
            if attempt is None:
                db.execute("UPDATE batches SET state = 'failed', reason = ? WHERE run_id = ? AND state = 'pending'",
                           (reason, placeholder))
            else:
                rows = db.execute("SELECT sequence, payload FROM batches WHERE run_id = ?", (placeholder,)).fetchall()
                db.executemany("UPDATE batches SET run_id = ?, attempt = ?, payload = ? WHERE sequence = ?", [
                    (run_id, attempt, adopted(common_pb2.StepBatch.FromString(payload), run_id, attempt)
                     .SerializeToString(), sequence) for sequence, payload in rows])
                if row is not None:
                    db.execute("INSERT OR REPLACE INTO attempts (attempt_id, run_id, owner, label, resume_from_step,"
                               " attempt) VALUES (?, ?, ?, ?, ?, ?)", (attempt_id, run_id, *row, attempt))
            db.execute("DELETE FROM pending_opens WHERE attempt_id = ?", (attempt_id,))
        if self.run_id == placeholder and attempt is not None:
            self.run_id, self.attempt = run_id, attempt

    def adopt(self, run_id: str, attempt: int) -> None:
        self.adopt_pending(self.run_id.removeprefix(PENDING_PREFIX), run_id, attempt)

    def abandon(self, reason: str) -> None:
        self.adopt_pending(self.run_id.removeprefix(PENDING_PREFIX), "", None, reason)

    def close(self) -> None:
        with self._lock:
            self._db.close()

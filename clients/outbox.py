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

What cannot be read is set aside, never in the way: a file SQLite reports corrupt is renamed
to ``<name>.corrupt-<UTC time>`` and what is still readable in it carried over into a fresh file
(clients.outbox_file, which also holds the file's schema and durable connection); a row whose
payload does not decode, or is not the batch its row says it is, is moved to the
``quarantined_batches`` table with the reason. Each is counted (`SqliteOutbox.quarantined`) and
warned about once; the data is kept for inspection.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from clients.outbox_file import open_file
from clients.outbox_salvage import decoded, move_aside
from trainledger.v1 import common_pb2

__all__ = [
    "MemoryOutbox",
    "SqliteOutbox",
    "Entry",
    "FILE_NAME",
    "PENDING_PREFIX",
    "pending_run_id",
    "adopted",
    "check_outbox",
]

log = logging.getLogger("trainledger.clients")

FILE_NAME = "trainledger-outbox.sqlite3"
PENDING_PREFIX = "pending:"
Entry = tuple[int, common_pb2.StepBatch, int]  # (sequence, batch, number of steps)

_SCAN_PAGE = 256


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
            self._entries = OrderedDict(
                (sequence, (sequence, adopted(batch, run_id, attempt), steps))
                for sequence, batch, steps in self._entries.values()
            )
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
        self.path = os.path.join(directory, FILE_NAME)
        self._lock = threading.Lock()
        self._db, set_aside = open_file(self.path)
        self.quarantined = set_aside  # files and batches this outbox set aside as unreadable
        self.check()  # Before anything counts or reads the batches held.

    def check(self) -> int:
        """Move every pending batch that cannot be read (of any run) to quarantined_batches;
        returns how many were moved."""
        bad: list[tuple[int, str]] = []
        after = 0
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT sequence, run_id, attempt, steps, payload FROM batches WHERE state ="
                    " 'pending' AND sequence > ? ORDER BY sequence LIMIT ?",
                    (after, _SCAN_PAGE),
                ).fetchall()
            if not rows:
                break
            for sequence, run_id, attempt, steps, payload in rows:
                batch, reason = decoded(payload, run_id, attempt, steps)
                if batch is None:
                    bad.append((sequence, reason))
            after = rows[-1][0]
        return self._quarantine(bad)

    def _quarantine(self, bad: list[tuple[int, str]]) -> int:
        if not bad:
            return 0
        with self._transaction() as db:
            moved = move_aside(db, bad)
        self._quarantined_rows(moved, bad[0][1])
        return moved

    def _quarantined_rows(self, moved: int, reason: str) -> None:
        if moved:
            self.quarantined += moved
            log.warning(
                "the trainledger outbox %s held %d batch(es) that cannot be read (%s): moved to its "
                "quarantined_batches table, set aside",
                self.path,
                moved,
                reason,
            )

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
            cursor = db.execute(
                "INSERT INTO batches (run_id, attempt, steps, payload) VALUES (?, ?, ?, ?)",
                (self.run_id, self.attempt, len(batch.steps), batch.SerializeToString()),
            )
            return int(cursor.lastrowid or 0)

    def pending(self, after: int = 0, limit: int = 64, *, attempt: int | None = None) -> list[Entry]:
        """Up to `limit` pending batches after sequence `after`, in order; a batch that cannot be
        read is quarantined on the way, never returned."""
        run_id, attempt = self.run_id, self.attempt if attempt is None else attempt
        entries: list[Entry] = []
        while len(entries) < limit:
            with self._lock:
                rows = self._db.execute(
                    "SELECT sequence, payload, steps FROM batches WHERE run_id = ? AND attempt = ?"
                    " AND state = 'pending' AND sequence > ? ORDER BY sequence LIMIT ?",
                    (run_id, attempt, after, limit - len(entries)),
                ).fetchall()
            bad: list[tuple[int, str]] = []
            for sequence, payload, steps in rows:
                batch, reason = decoded(payload, run_id, attempt, steps)
                if batch is None:
                    bad.append((sequence, reason))
                else:
                    entries.append((sequence, batch, steps))
            if not bad:
                break
            self._quarantine(bad)
            after = rows[-1][0]
        return entries

    def totals(self) -> tuple[int, int]:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*), TOTAL(steps) FROM batches WHERE run_id = ? AND attempt = ? AND state = 'pending'",
                (self.run_id, self.attempt),
            ).fetchone()
        return int(row[0]), int(row[1])

    def pending_attempts(self) -> list[int]:
        """The run's other attempts that still have pending batches, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT DISTINCT attempt FROM batches WHERE run_id = ? AND state = 'pending'"
                " AND attempt != ? ORDER BY attempt",
                (self.run_id, self.attempt),
            ).fetchall()
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
            row = db.execute(
                "SELECT attempt_id FROM attempts WHERE run_id = ? AND owner = ? AND label = ? AND"
                " resume_from_step IS ? AND attempt IS NULL",
                (self.run_id, owner, label, resume_from_step),
            ).fetchone()
            if row:
                return str(row[0])
            db.execute(
                "INSERT INTO attempts (attempt_id, run_id, owner, label, resume_from_step) VALUES (?, ?, ?, ?, ?)",
                (make, self.run_id, owner, label, resume_from_step),
            )
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
            db.execute(
                "INSERT OR IGNORE INTO pending_opens (attempt_id, run_key, owner, label, resume_from_step)"
                " VALUES (?, ?, ?, ?, ?)",
                (attempt_id, run_key, owner, label, resume_from_step),
            )

    def pending_opens(self, run_key: str, *, exclude: str = "") -> list[tuple[str, str, int | None]]:
        """(attempt_id, label, resume_from_step) of the run's attempts never started (their
        process died before the ledger answered), oldest first, leaving out `exclude`."""
        with self._lock:
            rows = self._db.execute(
                "SELECT attempt_id, label, resume_from_step FROM pending_opens WHERE run_key = ?"
                " AND attempt_id != ? ORDER BY rowid",
                (run_key, exclude),
            ).fetchall()
        return [(str(row[0]), str(row[1]), row[2]) for row in rows]

    def adopt_pending(self, attempt_id: str, run_id: str, attempt: int | None, reason: str = "") -> None:
        """The pending attempt `attempt_id` was started as `attempt` of `run_id`: rewrite its
        batches and record the attempt, in one transaction. With attempt None its start was
        refused for good: its batches are marked failed with `reason`."""
        placeholder = pending_run_id(attempt_id)
        moved = 0
        bad: list[tuple[int, str]] = []
        with self._transaction() as db:
            row = db.execute(
                "SELECT owner, label, resume_from_step FROM pending_opens WHERE attempt_id = ?", (attempt_id,)
            ).fetchone()
            if attempt is None:
                db.execute(
                    "UPDATE batches SET state = 'failed', reason = ? WHERE run_id = ? AND state = 'pending'",
                    (reason, placeholder),
                )
            else:
                rows = db.execute(
                    "SELECT sequence, payload, attempt, steps FROM batches WHERE run_id = ?", (placeholder,)
                ).fetchall()
                good: list[tuple[str, int, bytes, int]] = []
                for sequence, payload, held_attempt, steps in rows:
                    batch, why = decoded(payload, placeholder, held_attempt, steps)
                    if batch is None:
                        bad.append((sequence, why))
                    else:
                        good.append((run_id, attempt, adopted(batch, run_id, attempt).SerializeToString(), sequence))
                moved = move_aside(db, bad)
                db.executemany("UPDATE batches SET run_id = ?, attempt = ?, payload = ? WHERE sequence = ?", good)
                if row is not None:
                    db.execute(
                        "INSERT OR REPLACE INTO attempts (attempt_id, run_id, owner, label, resume_from_step,"
                        " attempt) VALUES (?, ?, ?, ?, ?, ?)",
                        (attempt_id, run_id, *row, attempt),
                    )
            db.execute("DELETE FROM pending_opens WHERE attempt_id = ?", (attempt_id,))
        if bad:
            self._quarantined_rows(moved, bad[0][1])
        if self.run_id == placeholder and attempt is not None:
            self.run_id, self.attempt = run_id, attempt

    def adopt(self, run_id: str, attempt: int) -> None:
        self.adopt_pending(self.run_id.removeprefix(PENDING_PREFIX), run_id, attempt)

    def abandon(self, reason: str) -> None:
        self.adopt_pending(self.run_id.removeprefix(PENDING_PREFIX), "", None, reason)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def check_outbox(directory: str | os.PathLike[str]) -> int:
    """Open the outbox in `directory` and set aside what cannot be read in it (a corrupt file,
    batches that do not decode); returns how many files and batches were set aside."""
    outbox = SqliteOutbox(directory)  # Opening it checks it.
    outbox.close()
    return outbox.quarantined

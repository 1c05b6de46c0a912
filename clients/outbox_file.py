"""The outbox's SQLite file: its schema, the connection settings that make every commit durable
before a batch is sent, and what is done with a file SQLite reports corrupt (not a database, a
malformed image, a failed quick_check): it is renamed to ``<name>.corrupt-<UTC time>`` (its -wal
and -shm with it), the whole, sound rows still readable in it are carried over into a fresh file
(clients.outbox_salvage reads them), and the outbox goes on. Kept apart from clients.outbox, which
holds the batches, so that opening and repairing the file is read in one place.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from datetime import UTC, datetime

from clients.outbox_salvage import BATCH_COLUMNS, Corrupt, decoded, is_corrupt, salvage

__all__ = ["SCHEMA", "CORRUPT_SUFFIX", "connect", "open_file", "set_aside"]

log = logging.getLogger("trainledger.clients")

CORRUPT_SUFFIX = ".corrupt-"  # a file set aside: <FILE_NAME>.corrupt-<UTC time>
SCHEMA = """
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
CREATE TABLE IF NOT EXISTS quarantined_batches (
    sequence INTEGER, run_id, attempt, steps, payload, state, reason TEXT NOT NULL, quarantined_at TEXT NOT NULL);
"""


def connect(path: str) -> sqlite3.Connection:
    """A connection to the outbox file at `path`, its schema in place; raises Corrupt when SQLite
    finds the file corrupt."""
    db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: every commit is fsynced before it returns, so a batch is on disk before it is sent.
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(SCHEMA)
        problems = [row[0] for row in db.execute("PRAGMA quick_check(5)").fetchall()]
        if problems != ["ok"]:
            raise Corrupt("; ".join(str(problem) for problem in problems))
    except Corrupt:
        db.close()
        raise
    except sqlite3.DatabaseError as error:
        db.close()
        if not is_corrupt(error):
            raise
        raise Corrupt(str(error)) from error
    except BaseException:
        db.close()
        raise
    return db


def open_file(path: str) -> tuple[sqlite3.Connection, int]:
    """(a connection to the outbox file at `path`, how many files were set aside: 0 or 1). A
    corrupt file is set aside (what is still readable in it carried over) and a fresh one made."""
    for _ in range(3):
        try:
            seen = os.stat(path)
        except FileNotFoundError:
            seen = None
        try:
            return connect(path), 0
        except Corrupt as corrupt:
            try:
                now = os.stat(path)
            except FileNotFoundError:
                continue  # Another process set it aside first.
            if seen is not None and (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
                continue  # Another process set it aside and made a fresh one: check that one.
            reason, aside = str(corrupt), set_aside(path)
            break
    else:
        return connect(path), 0
    db = connect(path)
    carried = _carry_over(db, aside)
    log.warning(
        "the trainledger outbox %s is corrupt (%s): set aside as %s; %d batch(es) still readable in it "
        "carried over into a fresh outbox",
        path,
        reason,
        os.path.basename(aside),
        carried,
    )
    return db, 1


def _carry_over(db: sqlite3.Connection, aside: str) -> int:
    """Copy the rows still readable in the file set aside at `aside` into the fresh file `db`, in
    one transaction (closing `db` if it fails); returns how many batches were carried over."""
    batches, attempts, opens = salvage(aside)
    # Only whole, sound rows are carried over; the rest stays in the file set aside.
    batches = [
        row
        for row in batches
        if row[5] in ("pending", "failed")
        and isinstance(row[6], str)
        and decoded(row[4], row[1], row[2], row[3])[0] is not None
    ]
    carried = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        for row in batches:
            carried += db.execute(
                f"INSERT OR IGNORE INTO batches ({BATCH_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", row
            ).rowcount
        for row in attempts:
            db.execute(
                "INSERT OR IGNORE INTO attempts (attempt_id, run_id, owner, label, resume_from_step,"
                " attempt) VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )
        for row in opens:
            db.execute(
                "INSERT OR IGNORE INTO pending_opens (attempt_id, run_key, owner, label,"
                " resume_from_step) VALUES (?, ?, ?, ?, ?)",
                row,
            )
    except BaseException:
        db.execute("ROLLBACK")
        db.close()
        raise
    db.execute("COMMIT")
    return carried


def set_aside(path: str) -> str:
    """Rename the outbox file at `path` (and its -wal and -shm) to <name>.corrupt-<UTC time>; its
    new path."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = f"{path}{CORRUPT_SUFFIX}{stamp}"
    number = 1
    while os.path.exists(aside):
        number += 1
        aside = f"{path}{CORRUPT_SUFFIX}{stamp}-{number}"
    os.rename(path, aside)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.rename(path + suffix, aside + suffix)
    return aside

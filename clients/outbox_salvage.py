"""Reading what is left of an outbox file SQLite reports corrupt, and telling a readable batch
row from one that is not: the salvage side of clients.outbox, which sets such files and rows
aside (never in the way of the trainer) and carries over what can still be read.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import tempfile
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import DecodeError

from trainledger.v1 import common_pb2

__all__ = ["BATCH_COLUMNS", "Corrupt", "is_corrupt", "decoded", "move_aside", "salvage", "now"]

BATCH_COLUMNS = "sequence, run_id, attempt, steps, payload, state, reason"
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (primary codes)
_SALVAGE_PROBES = 10_000  # sequences tried one by one past an unreadable stretch of a corrupt file


class Corrupt(sqlite3.DatabaseError):
    """The outbox file cannot be trusted; the message says why."""


def is_corrupt(error: sqlite3.DatabaseError) -> bool:
    """True for SQLite's corruption errors (not for a locked or full database, or an I/O error)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    return type(error) is sqlite3.DatabaseError  # OperationalError and the like are not corruption


def decoded(payload: object, run_id: object, attempt: object, steps: object) -> tuple[common_pb2.StepBatch | None, str]:
    """(the batch, "") when a row's payload decodes to the batch the row says it holds, else
    (None, why not)."""
    if not isinstance(payload, bytes):
        return None, f"the payload is {type(payload).__name__}, not bytes"
    try:
        batch = common_pb2.StepBatch.FromString(payload)
    except DecodeError as error:
        return None, f"the payload does not decode: {error}"
    if (batch.run_id, batch.attempt, len(batch.steps)) != (run_id, attempt, steps):
        return None, (
            f"the payload is a batch of run {batch.run_id!r}, attempt {batch.attempt}, "
            f"{len(batch.steps)} steps; its row says run {run_id!r}, attempt {attempt}, {steps} steps"
        )
    return batch, ""


def now() -> str:
    """The time now, UTC, as ISO 8601 text."""
    return datetime.now(UTC).isoformat()


def move_aside(db: sqlite3.Connection, bad: list[tuple[int, str]]) -> int:
    """Move the rows `bad` names ((sequence, reason)) from batches to quarantined_batches, inside
    the caller's transaction; returns how many were moved."""
    moved, stamp = 0, now()
    for sequence, reason in bad:
        db.execute(
            f"INSERT INTO quarantined_batches ({BATCH_COLUMNS}, quarantined_at) SELECT sequence, run_id,"
            " attempt, steps, payload, state, ?, ? FROM batches WHERE sequence = ?",
            (reason, stamp, sequence),
        )
        moved += db.execute("DELETE FROM batches WHERE sequence = ?", (sequence,)).rowcount
    return moved


def _pad_to_header(path: str) -> None:
    """Extend a truncated SQLite file with zeros to the size its header gives (whole pages), so
    that the pages before the cut can still be read."""
    with open(path, "r+b") as handle:
        header = handle.read(100)
        if len(header) < 100 or not header.startswith(b"SQLite format 3\0"):
            return
        page_size = struct.unpack(">H", header[16:18])[0]
        page_size = 65_536 if page_size == 1 else page_size
        pages = struct.unpack(">I", header[28:32])[0]
        size = os.fstat(handle.fileno()).st_size
        wanted = max(pages * page_size, -(-size // page_size) * page_size) if page_size else size
        if wanted > size:
            handle.truncate(wanted)


def salvage(path: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The rows still readable in a corrupt outbox file (its batches, attempts and pending opens),
    read from a scratch copy so that what was set aside stays as it was found."""
    batches: list[tuple[Any, ...]] = []
    attempts: list[tuple[Any, ...]] = []
    opens: list[tuple[Any, ...]] = []
    with tempfile.TemporaryDirectory(prefix=".salvage-", dir=os.path.dirname(path)) as scratch:
        copy = os.path.join(scratch, os.path.basename(path))
        try:
            shutil.copyfile(path, copy)
            if os.path.exists(path + "-wal"):
                shutil.copyfile(path + "-wal", copy + "-wal")
            _pad_to_header(copy)
        except OSError:
            return batches, attempts, opens
        db = sqlite3.connect(copy, isolation_level=None)
        try:
            high = None
            for query in (
                "SELECT seq FROM sqlite_sequence WHERE name = 'batches'",
                "SELECT MAX(sequence) FROM batches",
            ):
                try:
                    high = db.execute(query).fetchone()[0]
                    break
                except (sqlite3.DatabaseError, TypeError):
                    continue
            after = 0
            while True:
                try:
                    row = db.execute(
                        f"SELECT {BATCH_COLUMNS} FROM batches WHERE sequence > ? ORDER BY sequence LIMIT 1", (after,)
                    ).fetchone()
                except sqlite3.DatabaseError:
                    row = None
                    for sequence in range(after + 1, min(int(high or 0), after + _SALVAGE_PROBES) + 1):
                        try:
                            row = db.execute(
                                f"SELECT {BATCH_COLUMNS} FROM batches WHERE sequence = ?", (sequence,)
                            ).fetchone()
                        except sqlite3.DatabaseError:
                            continue
                        if row is not None:
                            break
                if row is None:
                    break
                batches.append(tuple(row))
                after = row[0]
            tables = (
                ("SELECT attempt_id, run_id, owner, label, resume_from_step, attempt FROM attempts", attempts),
                ("SELECT attempt_id, run_key, owner, label, resume_from_step FROM pending_opens", opens),
            )
            for query, rows in tables:
                try:
                    rows += [tuple(row) for row in db.execute(query).fetchall()]
                except sqlite3.DatabaseError:
                    pass
        except sqlite3.DatabaseError:
            pass  # Not even its tables can be read: nothing to carry over.
        finally:
            db.close()
    return batches, attempts, opens

"""`trainledger backup --to FILE`: a consistent copy of a SQLite ledger, taken while it is served.

SQLite's online backup API copies every page of the database in one step, inside one read
transaction, so the copy holds the log, and the views with their tracking positions, as of one
position of the log, whatever writes go on meanwhile (in WAL mode a reader neither blocks the
server's writers nor waits for them). The source is opened read-only and its holder lock
(services.runtime.holder) is not taken: copying a served file is the point. The copy is written to a
temporary file beside FILE, checked, synced, and only then linked to FILE, so FILE is either
absent or a complete copy, and an existing FILE is never overwritten. Serving the copy gives every
event up to its position. PostgreSQL databases are backed up with pg_dump.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import tempfile
from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["BackupError", "Copy", "backup", "companion_left", "copy_online", "sync_path"]


class BackupError(Exception):
    """The backup cannot be made; nothing was written under the destination's name."""


@dataclass(frozen=True)
class Copy:
    """A finished backup: where it is, the log position it holds, and its size."""

    path: str
    position: int
    size_bytes: int


COMPANIONS = ("-wal", "-shm", "-journal")


def companion_left(path: str) -> str:
    """The first of `path`-wal, -shm, -journal that exists ("" when none): files an earlier SQLite
    file of that name left behind, which SQLite would replay into a new file given the name."""
    for suffix in COMPANIONS:
        if os.path.lexists(path + suffix):
            return path + suffix
    return ""


def backup(database: str, destination: str) -> Copy:
    """Copy the SQLite ledger `database` to the new file `destination`. Raises BackupError."""
    if "://" in database:
        raise BackupError("backup copies SQLite files; back up a PostgreSQL database with pg_dump")
    if not os.path.isfile(database):
        raise BackupError(f"no database at {database}")
    if os.path.lexists(destination):
        raise BackupError(f"{destination} already exists: back up to a new file")
    left = companion_left(destination)
    if left:
        raise BackupError(
            f"{left} exists (left by an earlier file of that name): "
            f"back up to a new name, or move {left} away with its file"
        )
    if os.path.realpath(destination) == os.path.realpath(database):
        raise BackupError("the backup must be another file than the database")
    directory = os.path.dirname(os.path.abspath(destination))
    try:
        descriptor, partial = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(destination)}.", suffix=".partial"
        )
    except OSError as error:
        raise BackupError(f"cannot write in {directory}: {error.strerror or error}") from None
    os.close(descriptor)
    try:
        os.chmod(partial, stat.S_IMODE(os.stat(database).st_mode))  # Readable by whoever reads the ledger.
        position = copy_online(database, partial)
        sync_path(partial)
        try:
            os.link(partial, destination)  # Fails rather than replace a file made meanwhile.
        except FileExistsError:
            raise BackupError(f"{destination} already exists: back up to a new file") from None
        except OSError as error:
            raise BackupError(f"cannot write {destination}: {error.strerror or error}") from None
        sync_path(directory)
        return Copy(destination, position, os.path.getsize(destination))
    finally:
        for leftover in (partial, partial + "-wal", partial + "-shm", partial + "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def copy_online(database: str, partial: str) -> int:
    """Copy `database` into the empty file `partial` and check the copy; its log's head."""
    try:
        source = sqlite3.connect(f"file:{quote(os.path.abspath(database))}?mode=ro", uri=True, timeout=30)
        try:
            target = sqlite3.connect(partial)
            try:
                source.backup(target)  # All pages in one step: one read transaction, one position.
                checked = " ".join(target.execute("PRAGMA quick_check(1)").fetchone()[0].split())
                if checked != "ok":
                    raise BackupError(f"the copy of {database} is damaged (SQLite: {checked}): so is the database")
                try:
                    head = target.execute("SELECT MAX(rowid) FROM stored_events").fetchone()[0]
                except sqlite3.OperationalError:
                    raise BackupError(f"{database} holds no trainledger log") from None
            finally:
                target.close()
        finally:
            source.close()
    except sqlite3.Error as error:
        raise BackupError(f"cannot copy {database}: {error}") from None
    return int(head or 0)


def sync_path(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)

"""The SQLite file itself: the settings that name it, the uri that opens it read-only, and
whether it is too damaged to be opened for writing."""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote, unquote

__all__ = ["damage", "file_path", "read_only_uri", "sqlite_env"]

SQLITE_HEADER = b"SQLite format 3\x00"
LEFT_AS_IT_IS = "the file was left as it is: restore it from a backup (`trainledger backup` makes one)"


def damage(database: str) -> str | None:
    """Why the SQLite file `database` must not be opened for writing: its header is not SQLite's, or
    SQLite's quick_check finds it damaged (cut short, pages overwritten). None for a sound file, a
    file not there yet, and a database that is no SQLite file path. Only reads: the file is opened
    read-only, with its write-ahead log, so a crash image is judged as SQLite will recover it. Takes
    a moment per hundred megabytes."""
    if "://" in database or database == ":memory:" or database.startswith("file:"):
        return None
    try:
        with open(database, "rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError:
        return None  # Not there yet (or not readable: opening the ledger reports that).
    if header and header != SQLITE_HEADER:
        return f"not a SQLite database, or its header is damaged; {LEFT_AS_IT_IS}"
    try:
        connection = sqlite3.connect(f"file:{quote(os.path.abspath(database))}?mode=ro", uri=True)
        try:
            found = [row[0] for row in connection.execute("PRAGMA quick_check(1)")]
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        if getattr(error, "sqlite_errorcode", 0) & 0xFF not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return None  # Not damage (a lock, permissions): opening the ledger reports it.
        found = [str(error)]
    if found == ["ok"]:
        return None
    return f"the file is damaged (SQLite: {' '.join(found[0].split())}); {LEFT_AS_IT_IS}"


def sqlite_env(path: str) -> dict[str, str]:
    """eventsourcing settings for a SQLite file (ledger.backend chooses between the backends)."""
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": path,
        "SQLITE_LOCK_TIMEOUT": "30",
        "APPLICATION_RECORDER_TOPIC": "ledger.storage.sqlite.recorder:SQLiteRecorder",
    }


def read_only_uri(path: str) -> str:
    """The uri that opens the SQLite file at `path` read-only: eventsourcing's connections to a
    ledger opened to check it use it too, so none can merge a write-ahead log into the file or
    switch a rollback journal to one."""
    return f"file:{quote(os.path.abspath(path))}?mode=ro"


def file_path(name: str) -> str:
    """The file a SQLITE_DBNAME names: a path, or a `file:` uri of read_only_uri's."""
    return unquote(name[len("file:") :].partition("?")[0]) if name.startswith("file:") else name

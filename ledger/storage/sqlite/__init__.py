"""SQLite, the embedded default backend: events and views in one file (WAL). The package holds one
concern per module:

- files: a file path as eventsourcing settings (sqlite_env), the uri that opens the file read-only,
  and `damage`, which tells a file that must not be opened for writing;
- recorder: SQLiteRecorder, eventsourcing's recorder plus the keys index and the seals of the hash
  chain (ledger.storage.chain), both written in the events' transaction;
- storage: SQLiteStorage, the views and their tracking in the same file (ledger.storage.base says
  what a Storage is).
"""

from ledger.storage.sqlite.files import damage, read_only_uri, sqlite_env
from ledger.storage.sqlite.recorder import SQLiteRecorder
from ledger.storage.sqlite.storage import SQLiteStorage

__all__ = ["SQLiteRecorder", "SQLiteStorage", "damage", "read_only_uri", "sqlite_env"]

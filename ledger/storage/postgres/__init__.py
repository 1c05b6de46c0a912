"""PostgreSQL, the scale-out backend: several server processes over one database.

Events live in eventsourcing's tables (`trainledger_events`, `trainledger_snapshots`), the views
in ours (TABLES of ledger.views.schema plus view_tracking), all in one schema (`?schema=NAME` in
the URL, else public). The package holds one concern per module:

- settings: a postgresql:// URL as eventsourcing settings (postgres_env);
- connections: connection settings, reachability, the schema's advisory lock, and the one retry
  rule for calls whose pooled connection died (a database restart);
- recorders: eventsourcing's recorders, bounded by that rule, with the keys index, and the Factory
  that the settings name as PERSISTENCE_MODULE;
- sql: the views' portable SQL (`?` placeholders) translated for psycopg, and lazy read cursors;
- storage: PostgresStorage, the views over a pool of their own;
- projector: PostgresProjector, exactly once across processes, woken by LISTEN/NOTIFY, and the
  followers of a server that leaves projection to `trainledger project` workers.
"""

from ledger.storage.postgres.projector import PostgresProjector
from ledger.storage.postgres.recorders import AggregateRecorder, ApplicationRecorder, Factory
from ledger.storage.postgres.settings import postgres_env
from ledger.storage.postgres.storage import PostgresStorage

__all__ = [
    "AggregateRecorder",
    "ApplicationRecorder",
    "Factory",
    "PostgresProjector",
    "PostgresStorage",
    "postgres_env",
]

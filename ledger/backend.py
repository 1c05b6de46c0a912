"""The one place that chooses the backend: SQLite for a file path, PostgreSQL for a URL.

A database is named by one string (`--db PATH`, `--database-url URL`, TRAINLEDGER_DATABASE_URL).
`is_postgres_url` is the test of that string; `persistence_env` turns it into eventsourcing's
settings; `open_storage` gives an application the Storage of the backend those settings chose.
PostgreSQL's modules are imported only when a PostgreSQL database is used (psycopg is an extra).
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from eventsourcing.application import Application

from ledger.storage.base import Storage
from ledger.storage.sqlite import SQLiteStorage, sqlite_env
from ledger.storage.sqlite import damage as sqlite_damage

__all__ = ["POSTGRES_SCHEMES", "damage", "is_postgres_url", "open_storage", "persistence_env", "uses_postgres"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# The persistence modules (eventsourcing's own, or ours: ledger.storage.postgres) whose storage is PostgreSQL.
POSTGRES_MODULES = ("eventsourcing.postgres", "ledger.storage.postgres")


def is_postgres_url(database: str) -> bool:
    """Whether `database` names a PostgreSQL database (else it is a SQLite file path)."""
    return database.startswith(POSTGRES_SCHEMES)


def persistence_env(database: str) -> dict[str, str]:
    """eventsourcing settings for a SQLite path or a postgresql:// URL. Raises ValueError for a
    malformed URL."""
    if is_postgres_url(database):
        from ledger.storage.postgres import postgres_env

        return postgres_env(database)
    return sqlite_env(database)


def uses_postgres(env: Mapping[str, str]) -> bool:
    """Whether eventsourcing settings (persistence_env's) store the log in PostgreSQL."""
    return env.get("PERSISTENCE_MODULE", "").startswith(POSTGRES_MODULES)


def open_storage(app: Application[UUID]) -> Storage:
    """The Storage (views, positions, keys index) next to `app`'s recorder."""
    if uses_postgres(app.env):
        from ledger.storage.postgres import PostgresStorage

        return PostgresStorage(app)
    return SQLiteStorage(app)


def damage(database: str) -> str | None:
    """Why `database` must not be opened for writing (a damaged SQLite file), else None."""
    if is_postgres_url(database):
        return None
    return sqlite_damage(database)

"""The one place that chooses the backend: SQLite for a file path, PostgreSQL for a URL.

A database is named by one string (`--db PATH`, `--database-url URL`, TRAINLEDGER_DATABASE_URL).
`is_postgres_url` is the test of that string; `persistence_env` turns it into eventsourcing's
settings; `open_storage` gives an application the Storage of the backend those settings chose.
PostgreSQL's modules are imported only when a PostgreSQL database is used: psycopg is the
`[postgres]` extra, and an install without it is told so in one line (`PostgresDriverMissing`, an
ImportError naming the extra) rather than with the import's traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from types import ModuleType
from uuid import UUID

from eventsourcing.application import Application

from ledger.storage.base import Storage
from ledger.storage.sqlite import SQLiteStorage, sqlite_env
from ledger.storage.sqlite import damage as sqlite_damage

__all__ = [
    "POSTGRES_SCHEMES",
    "PostgresDriverMissing",
    "damage",
    "is_postgres_url",
    "open_storage",
    "persistence_env",
    "uses_postgres",
]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# The persistence modules (eventsourcing's own, or ours: ledger.storage.postgres) whose storage is PostgreSQL.
POSTGRES_MODULES = ("eventsourcing.postgres", "ledger.storage.postgres")
# The packages of the [postgres] extra: an import of either that fails means the extra is missing.
POSTGRES_DRIVERS = ("psycopg", "psycopg_pool")


class PostgresDriverMissing(ImportError):
    """PostgreSQL was asked for, and psycopg (the `[postgres]` extra) is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "PostgreSQL needs psycopg, which is not installed: pip install -e '.[postgres]'"
            " in a clone (pip install 'trainledger[postgres]' otherwise)"
        )


def _postgres() -> ModuleType:
    """ledger.storage.postgres, or PostgresDriverMissing when psycopg cannot be imported."""
    try:
        return import_module("ledger.storage.postgres")
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] in POSTGRES_DRIVERS:
            raise PostgresDriverMissing() from None
        raise


def is_postgres_url(database: str) -> bool:
    """Whether `database` names a PostgreSQL database (else it is a SQLite file path)."""
    return database.startswith(POSTGRES_SCHEMES)


def persistence_env(database: str) -> dict[str, str]:
    """eventsourcing settings for a SQLite path or a postgresql:// URL. Raises ValueError for a
    malformed URL."""
    if is_postgres_url(database):
        env: dict[str, str] = _postgres().postgres_env(database)
        return env
    return sqlite_env(database)


def uses_postgres(env: Mapping[str, str]) -> bool:
    """Whether eventsourcing settings (persistence_env's) store the log in PostgreSQL."""
    return env.get("PERSISTENCE_MODULE", "").startswith(POSTGRES_MODULES)


def open_storage(app: Application[UUID]) -> Storage:
    """The Storage (views, positions, keys index) next to `app`'s recorder."""
    if uses_postgres(app.env):
        storage: Storage = _postgres().PostgresStorage(app)
        return storage
    return SQLiteStorage(app)


def damage(database: str) -> str | None:
    """Why `database` must not be opened for writing (a damaged SQLite file), else None."""
    if is_postgres_url(database):
        return None
    return sqlite_damage(database)

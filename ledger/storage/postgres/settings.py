"""A postgresql:// URL as eventsourcing settings: host, database, user, schema and pool options."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

from eventsourcing.utils import get_topic

from ledger.storage.postgres.connections import CONNECT_TIMEOUT_S
from ledger.storage.postgres.recorders import Factory

__all__ = ["URL_SETTINGS", "postgres_env"]

# URL query parameters -> eventsourcing settings.
URL_SETTINGS = {
    "schema": "POSTGRES_SCHEMA",
    "connect_timeout": "POSTGRES_CONNECT_TIMEOUT",
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
    "max_waiting": "POSTGRES_MAX_WAITING",
    "lock_timeout": "POSTGRES_LOCK_TIMEOUT",
    "conn_max_age": "POSTGRES_CONN_MAX_AGE",
    "idle_in_transaction_session_timeout": "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT",
}
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")


def postgres_env(url: str) -> dict[str, str]:
    """eventsourcing settings for `postgresql://user:password@host:port/dbname?schema=NAME`.
    Other query parameters: connect_timeout, pool_size, max_overflow, max_waiting, lock_timeout,
    conn_max_age, idle_in_transaction_session_timeout. Raises ValueError for a malformed URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"not a postgresql:// URL: {url!r}")
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or "/" in dbname:
        raise ValueError("the URL must name one database: postgresql://user@host:port/dbname")
    env = {
        # The factory's topic is read from the settings at each start, never stored with the log.
        "PERSISTENCE_MODULE": get_topic(Factory),
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_CONNECT_TIMEOUT": str(CONNECT_TIMEOUT_S),
    }
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        setting = URL_SETTINGS.get(key)
        if setting is None:
            raise ValueError(f"unknown parameter {key!r} in the database URL (known: {sorted(URL_SETTINGS)})")
        if key == "schema":
            if not SCHEMA_NAME.fullmatch(value):
                raise ValueError(f"schema must be a plain identifier of at most 48 characters: {value!r}")
        elif not value.isdigit():
            raise ValueError(f"{key} must be a whole number: {value!r}")
        env[setting] = value
    return env

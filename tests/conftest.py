"""Shared fixtures. The backend switch: every test that takes `database` runs on SQLite, and also
on PostgreSQL when TRAINLEDGER_TEST_DATABASE_URL names a server (scripts/test starts one)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
# Every `trainledger serve` a test starts serves its dashboard on a free port: tests run servers
# side by side, and the default 127.0.0.1:8080 would let only one of them start.
os.environ.setdefault("TRAINLEDGER_HTTP", "127.0.0.1:0")
BACKENDS = ["sqlite", "postgres"] if POSTGRES_URL else ["sqlite"]


def _drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file path, or a postgresql:// URL with its own schema
    (`?schema=NAME`), dropped afterwards."""
    if request.param == "sqlite":
        yield str(tmp_path / "ledger.db")
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{separator}schema={schema}"
    _drop_schema(schema)


@pytest.fixture
def sqlite_database(tmp_path) -> str:
    """A SQLite file path, for tests that are about the embedded default only."""
    return str(tmp_path / "ledger.db")

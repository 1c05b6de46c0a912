"""Dropping views on PostgreSQL leaves the views' pooled connections usable: a transaction that
drops a view table, then writes rows the connection had written before, must not leave the
next transaction on that connection naming a prepared statement the server no longer has.

psycopg forgets its prepared statements when it reads a DROP's answer and sends DEALLOCATE ALL
after the statement it is executing; in pipeline mode that answer may arrive in the middle of an
executemany, which prepares its statement again before the DEALLOCATE ALL goes out. The test
makes the answer arrive there: a statement that raises a NOTICE (CREATE TABLE IF NOT EXISTS on a
table that exists) makes the server flush the DROP's answer, and the test waits until it is on
the socket before the rows go out. Needs TRAINLEDGER_TEST_DATABASE_URL."""

from __future__ import annotations

import os
import select
import uuid
from collections.abc import Iterator

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import psycopg  # noqa: E402

from ledger import Ledger  # noqa: E402
from ledger.storage.postgres.connections import pipelined_transaction  # noqa: E402
from ledger.storage.postgres.sql import Cursor, table_ddl  # noqa: E402
from ledger.views.schema import TABLES, VIEWS  # noqa: E402

pytestmark = pytest.mark.postgres

# What PostgresStorage.create_tables writes after the tables (and drop() after a DROP).
TRACKING = "INSERT INTO view_tracking (view, position) VALUES (?, 0) ON CONFLICT (view) DO NOTHING"
TRACKING_TABLE = "CREATE TABLE IF NOT EXISTS view_tracking (view TEXT PRIMARY KEY, position BIGINT NOT NULL)"
# Rounds of the sequence: each makes the race the test sets up; one is enough to fail without the fix.
ROUNDS = 20


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    app = Ledger.open(f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}")
    try:
        yield app
    finally:
        app.close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_view_dropped_mid_pipeline_leaves_the_connection_s_next_transactions_working(ledger: Ledger) -> None:
    storage = ledger.storage
    rows = [(view,) for view in VIEWS]
    table = next(name for name, declared in TABLES.items() if declared.view == "runs")
    declared = TABLES[table]
    with storage.pool.connection() as connection:
        for _ in range(ROUNDS):
            with pipelined_transaction(connection, b"SET LOCAL synchronous_commit = off") as raw:
                cursor = Cursor(raw)
                cursor.executemany(TRACKING, rows)
            with pipelined_transaction(connection, b"SET LOCAL synchronous_commit = off") as raw:
                cursor = Cursor(raw)
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in table_ddl(table, declared.columns, declared.primary_key, declared.indexes):
                    cursor.execute(statement)
                cursor.execute(TRACKING_TABLE)  # Its NOTICE flushes the answers before it.
                select.select([connection.fileno()], [], [], storage.timeout_s)
                cursor.executemany(TRACKING, rows)
    assert storage.tracking_positions() == dict.fromkeys(VIEWS, 0)

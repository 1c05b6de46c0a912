"""A Ledger on the `database` fixture (SQLite always, PostgreSQL when
TRAINLEDGER_TEST_DATABASE_URL is set), with a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from ledger import Ledger
from ledger.views import TABLES

START = datetime(2025, 1, 1, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(database: str, clock: Clock) -> Iterator[Ledger]:
    app = Ledger.open(database, clock=clock)
    try:
        yield app
    finally:
        app.close()


def dump_views(app: Ledger) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every view table, sorted, for comparing a rebuild with the original."""
    connection = app.views.connect()
    dump = {}
    for table in (*TABLES, "view_tracking"):
        cursor = connection.cursor()
        try:
            cursor.execute(f"SELECT * FROM {table}")
            dump[table] = sorted((tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                                  for row in cursor.fetchall()), key=repr)
        finally:
            cursor.close()
    return dump

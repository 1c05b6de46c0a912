"""Fixtures and helpers shared by the ledger's tests: a fake clock and a Ledger on the
`database` fixture (SQLite always, PostgreSQL when TRAINLEDGER_TEST_DATABASE_URL is set)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ledger import Ledger
from ledger.domain.entries import AccountTotals
from ledger.views.models import Account
from ledger.views.schema import TABLES

START = datetime(2025, 1, 1, tzinfo=UTC)
DIGEST_A = "a" * 64
DIGEST_B = "b" * 64
DIGEST_C = "c" * 64


class FakeClock:
    """An injectable clock: Ledger.open(path, clock=FakeClock())."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ledger(database: str, clock: FakeClock) -> Iterator[Ledger]:
    """A Ledger with its projector running, on a fresh database of each backend."""
    app = Ledger.open(database, clock=clock)
    try:
        yield app
    finally:
        app.close()


def summary_of(account: Account) -> AccountTotals:
    """A view's Account in the form of its aggregate's summary (Ledger.account_now), to compare
    what the view shows with what the aggregate holds."""
    return AccountTotals(
        account=account.account,
        parent=account.parent,
        cap_usd_micro=account.cap_usd_micro,
        committed_usd_micro=account.committed_usd_micro,
        presumed_usd_micro=account.presumed_usd_micro,
        pending_usd_micro=account.pending_usd_micro,
        remaining_usd_micro=account.remaining_usd_micro,
        overrun_usd_micro=account.overrun_usd_micro,
    )


def dump_views(app: Ledger) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every view table, sorted, for comparing a rebuild with the original."""
    connection = app.views.connect()
    dump = {}
    for table in (*TABLES, "view_tracking"):
        cursor = connection.cursor()
        try:
            cursor.execute(f"SELECT * FROM {table}")
            # PostgreSQL hands BYTEA back as memoryview: compare bytes.
            dump[table] = sorted(
                (tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor.fetchall()),
                key=repr,
            )
        finally:
            cursor.close()
    return dump

"""A PostgreSQL projector is not woken by the NOTIFY of its own process's inserts: the kernel hands
those events over and wakes it itself, so a wake for them only made a pass that read the log
and found nothing. Another process's inserts still wake it, and their events are projected."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import psycopg  # noqa: E402

from ledger import Ledger  # noqa: E402

pytestmark = pytest.mark.postgres


@pytest.fixture
def url() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _backends(ledger: Ledger) -> set[int]:
    """The backend pids of the connections the ledger's inserts used."""
    return set(ledger.recorder.own_backends)  # type: ignore[attr-defined]


def test_the_notify_of_its_own_insert_does_not_wake_the_projector(url: str) -> None:
    ledger = Ledger.open(url)
    other = Ledger.open(url, project=False)  # Another process's writer, on the same database.
    try:
        ours = ledger.open_run(run_key="ours", cap_usd_micro=10**9)
        theirs = other.open_run(run_key="theirs", cap_usd_micro=10**9)
        mine = _backends(ledger)
        assert mine and not mine & _backends(other)
        channel = ledger.recorder.channel_name  # type: ignore[attr-defined]
        projector = ledger.projector

        projector._wake.clear()
        projector._notified(psycopg.Notify(channel, "", next(iter(mine))))
        assert not projector._wake.is_set()
        projector._notified(psycopg.Notify(channel, "", next(iter(_backends(other)))))
        assert projector._wake.is_set()

        # Both writers' events are projected.
        last = other.reserve(account=theirs.run_id, reservation_id="r1", amount_usd_micro=200)
        ledger.wait(last.position, 10)
        assert ledger.account(theirs.run_id).pending_usd_micro == 200
        receipt = ledger.reserve(account=ours.run_id, reservation_id="r1", amount_usd_micro=100)
        ledger.wait(receipt.position, 10)
        assert ledger.account(ours.run_id).pending_usd_micro == 100
    finally:
        other.close()
        ledger.close()

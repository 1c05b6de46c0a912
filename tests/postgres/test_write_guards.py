"""What an event write on PostgreSQL checks and applies before it inserts, in the statements that
go out with its first round trip: a log whose events after the last seal lack seals takes no new
write (LOG_UNSEALED, nothing stored), whether some seals or all of them are gone; and the write
waits for the events table's lock no longer than the URL's lock_timeout.

Needs TRAINLEDGER_TEST_DATABASE_URL.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from ledger import Ledger
from ledger.domain.errors import Refused

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)


@pytest.fixture
def schema_url() -> Iterator[tuple[str, str]]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{separator}schema={schema}", schema
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _count(schema: str, table: str) -> int:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        row = connection.execute(f'SELECT COUNT(*) FROM "{schema}".{table}').fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("deleted", ["the last seal", "every seal"])
def test_a_write_after_events_without_seals_is_refused_and_stores_nothing(
    schema_url: tuple[str, str], deleted: str
) -> None:
    url, schema = schema_url
    ledger = Ledger.open(url, project=False)
    try:
        run = ledger.open_run(run_key="sealed", cap_usd_micro=10**9)
        ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10)
        where = " WHERE position = (SELECT MAX(position) FROM {0}.trainledger_events_seals)"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(
                f'DELETE FROM "{schema}".trainledger_events_seals'
                + (where.format(f'"{schema}"') if deleted == "the last seal" else "")
            )
        events = _count(schema, "trainledger_events")
        with pytest.raises(Refused) as refused:
            ledger.reserve(account=run.run_id, reservation_id="r2", amount_usd_micro=10)
        assert refused.value.reason == "LOG_UNSEALED"
        assert _count(schema, "trainledger_events") == events
    finally:
        ledger.close()


def test_a_write_behind_a_held_table_lock_gives_up_at_the_lock_timeout(schema_url: tuple[str, str]) -> None:
    url, schema = schema_url
    ledger = Ledger.open(f"{url}&lock_timeout=1", project=False)
    outcome: list[BaseException | str] = []
    try:
        run = ledger.open_run(run_key="locked", cap_usd_micro=10**9)
        events = _count(schema, "trainledger_events")

        def write() -> None:
            try:
                ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10)
                outcome.append("written")
            except BaseException as error:  # Reported below, in the test's thread.
                outcome.append(error)

        with psycopg.connect(POSTGRES_URL) as holder:
            holder.execute(f'LOCK TABLE "{schema}".trainledger_events IN EXCLUSIVE MODE')
            writer = threading.Thread(target=write)
            writer.start()
            # Held until the write ends or gives up: without the lock timeout it waits on.
            writer.join(60)
            ended = not writer.is_alive()
            holder.rollback()
        writer.join(60)
        assert ended, "the write waited past its lock timeout"
        assert len(outcome) == 1 and outcome[0] != "written", outcome
        assert "lock" in str(outcome[0]).lower(), outcome
        assert _count(schema, "trainledger_events") == events
    finally:
        ledger.close()

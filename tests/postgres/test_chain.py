"""The hash chain on PostgreSQL with several writers: two ledgers on one schema (as two replicas
are) write at once from several threads each; every event is sealed once, in position order, and
the log verifies. Writers are serialised by the events table's lock that eventsourcing's recorder
takes before inserting, and the seals are read and written under it.

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

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

WRITERS_PER_LEDGER = 3
BATCHES_PER_WRITER = 40


@pytest.fixture
def schema_url() -> Iterator[tuple[str, str]]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{separator}schema={schema}", schema
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_two_ledgers_writing_at_once_seal_every_event_in_order(schema_url: tuple[str, str]) -> None:
    url, schema = schema_url
    ledgers = [Ledger.open(url), Ledger.open(url, project=False)]
    try:
        errors: list[BaseException] = []

        def write(ledger: Ledger, name: str) -> None:
            try:
                run = ledger.open_run(run_key=name, cap_usd_micro=10**9)
                ledger.start_attempt(run_id=run.run_id, attempt_id="a")
                for step in range(1, BATCHES_PER_WRITER + 1):
                    ledger.append_steps(run_id=run.run_id, attempt=1, steps=[step], metrics={"loss": [0.5]})
                    ledger.reserve(account=run.run_id, reservation_id=f"r{step}", amount_usd_micro=10)
            except BaseException as error:  # Reported below, in the test's thread.
                errors.append(error)

        threads = [
            threading.Thread(target=write, args=(ledger, f"writer-{index}-{number}"))
            for index, ledger in enumerate(ledgers)
            for number in range(WRITERS_PER_LEDGER)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []
        # Per writer: an account and a run opened, an attempt, and a batch and a reservation per step.
        events = 2 * WRITERS_PER_LEDGER * (3 + 2 * BATCHES_PER_WRITER)
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            positions = [
                row[0]
                for row in connection.execute(
                    f'SELECT e.notification_id FROM "{schema}".trainledger_events e'
                    f' JOIN "{schema}".trainledger_events_seals s ON s.position = e.notification_id'
                    " ORDER BY 1"
                )
            ]
        assert len(positions) == events
        ledgers[0].wait(ledgers[0].head())
        result = ledgers[1].verify()
        assert result.ok and result.checked == events, result
    finally:
        for ledger in ledgers:
            ledger.close()

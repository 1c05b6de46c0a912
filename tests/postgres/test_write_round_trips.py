"""On PostgreSQL an event write is two round trips: one that takes the table lock and inserts the
keys and the events (their positions and the last seal come back), one that inserts their seals
and commits. Each round trip is a network wait under the lock that runs writers one at a time.
Counted from libpq's own trace of the connection the write runs on: every round trip ends with
one ReadyForQuery from the server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import psycopg  # noqa: E402
from eventsourcing.persistence import IntegrityError, StoredEvent  # noqa: E402

from ledger import Ledger  # noqa: E402

pytestmark = pytest.mark.postgres


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    app = Ledger.open(url)
    try:
        yield app
    finally:
        app.close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _traced(ledger: Ledger, trace: Path) -> None:
    """From now on, libpq traces into `trace` every connection the events' recorder writes on."""
    datastore = ledger.recorder.datastore
    get_connection = datastore.get_connection

    @contextmanager
    def traced() -> Iterator[Any]:
        with get_connection() as connection, trace.open("a") as sink:
            connection.pgconn.trace(sink.fileno())
            try:
                yield connection
            finally:
                connection.pgconn.untrace()

    datastore.get_connection = traced


def _round_trips(trace: Path) -> int:
    return sum(1 for line in trace.read_text().splitlines() if "\tB\t" in line and "\tReadyForQuery\t" in line)


def test_an_event_write_is_two_round_trips(ledger: Ledger, tmp_path: Path) -> None:
    run = ledger.open_run(run_key="trips", cap_usd_micro=10**9)
    ledger.reserve(account=run.run_id, reservation_id="r0", amount_usd_micro=10)
    trace = tmp_path / "libpq.trace"
    _traced(ledger, trace)

    ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10)
    assert _round_trips(trace) == 2
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    ledger.append_steps(run_id=run.run_id, attempt=1, steps=list(range(1, 101)), metrics={"loss": [0.5] * 100})
    assert _round_trips(trace) == 6

    verification = ledger.verify()
    assert verification.ok and verification.checked == ledger.head() == ledger.chain_head().position


def test_a_write_that_clashes_stores_nothing_and_the_next_one_is_sealed(ledger: Ledger) -> None:
    run = ledger.open_run(run_key="clash", cap_usd_micro=None)
    recorder = ledger.recorder
    first = recorder.select_events(uuid.UUID(run.run_id), limit=1)[0]
    head = ledger.head()
    # The run's first event again, beside a new one: its (aggregate, version) is taken.
    fresh = StoredEvent(uuid.uuid4(), 1, first.topic, first.state)
    with pytest.raises(IntegrityError):
        recorder.insert_events([fresh, first])
    assert ledger.head() == head
    assert recorder.select_events(fresh.originator_id) == []
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    receipt = ledger.append_steps(run_id=run.run_id, attempt=1, steps=[1, 2, 3])
    assert receipt.position > head
    verification = ledger.verify()
    # Positions skip the numbers the rolled back insert drew (the run, its account, the attempt, the batch).
    assert verification.ok and verification.checked == 4
    assert verification.head.position == ledger.head() == ledger.chain_head().position

"""On PostgreSQL an event write is two round trips: one that takes the table lock and inserts the
keys and the events (their positions and the last seal come back), one that inserts their seals
and commits. Each round trip is a network wait under the lock that runs writers one at a time.
Counted from libpq's own trace of the connection the write runs on: each turn from the client's
messages to the server's answers is a wait for the network."""

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
    """The turns from the client's messages to the server's: each is a wait for an answer."""
    turns, last = 0, ""
    for line in trace.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) > 1 and fields[1] in ("F", "B"):
            turns += fields[1] == "B" and last == "F"
            last = fields[1]
    return turns


def _statements(trace: Path) -> int:
    """The statements the client sent: one Bind each (prepared or not)."""
    return sum(line.split("\t")[1:4:2] == ["F", "Bind"] for line in trace.read_text().splitlines())


def test_a_reserve_s_event_write_is_eight_statements(ledger: Ledger, tmp_path: Path) -> None:
    # BEGIN; the lock timeout and the NOTIFY; the table lock; the keys; the last seal and whether
    # an event lacks one; the events; their seals; COMMIT. Each costs the client and the server
    # its own parse, bind and answer, under the lock that runs writers one at a time.
    run = ledger.open_run(run_key="statements", cap_usd_micro=10**9)
    ledger.reserve(account=run.run_id, reservation_id="r0", amount_usd_micro=10)
    trace = tmp_path / "libpq.trace"
    _traced(ledger, trace)

    ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10)

    assert _statements(trace) == 8
    assert _round_trips(trace) == 2
    assert ledger.verify().ok


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


def test_a_projected_write_is_two_round_trips_of_the_views(ledger: Ledger, tmp_path: Path) -> None:
    # The projector's transaction: BEGIN, the tracking rows locked and read (the first round
    # trip), the views' rows, the tracking and COMMIT (the second).
    run = ledger.open_run(run_key="projected", cap_usd_micro=10**9)
    ledger.wait(ledger.reserve(account=run.run_id, reservation_id="r0", amount_usd_micro=10).position)
    traces: list[Path] = []
    pool = ledger.storage.pool
    connection = pool.connection

    @contextmanager
    def traced(*args: Any, **kwargs: Any) -> Iterator[Any]:
        traces.append(tmp_path / f"views-{len(traces)}.trace")  # One a checkout: the projector's, a poll's.
        with connection(*args, **kwargs) as pooled, traces[-1].open("w") as sink:
            pooled.pgconn.trace(sink.fileno())
            try:
                yield pooled
            finally:
                pooled.pgconn.untrace()

    pool.connection = traced  # type: ignore[method-assign]
    try:
        ledger.wait(ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10).position)
    finally:
        pool.connection = connection  # type: ignore[method-assign]
    transactions = [trace for trace in traces if '"BEGIN"' in trace.read_text()]
    assert len(transactions) == 1
    assert _round_trips(transactions[0]) == 2
    assert ledger.run_state(run.run_id).spend.pending_usd_micro == 20

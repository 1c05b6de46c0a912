"""Verify over the wire, guarded: one at a time per ledger (RESOURCE_EXHAUSTED, VERIFY_BUSY), its
progress streamed, stopped when its caller cancels; it reports a log without seals and writes
nothing; a damaged snapshot is named by Verify while its run keeps taking writes; keys deleted
from the index are rebuilt from the log when the ledger is opened again, so a retried charge stays
the duplicate it is. Real SQLite files and PostgreSQL schemas, a real server on port 0."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import grpc
import pytest

from ledger import Ledger
from tests.ledger.conftest import FakeClock
from tests.ledger.test_chain import HEAD, SNAPSHOT_POSITION, Store, write_scenario
from tests.service.support import Served, error_info
from trainledger.v1 import common_pb2, events_pb2, runs_pb2, spend_pb2

# More settled charges than an account keeps in its window (ledger.domain.accounts.SETTLED_WINDOW),
# so the oldest ones are recalled through the keys index.
CHARGES = 2_010
CHARGE_USD_MICRO = 1_000


@pytest.fixture
def serve() -> Iterator[Callable[[str], Served]]:
    opened: list[tuple[Ledger, Served]] = []

    def start(database: str) -> Served:
        ledger = Ledger.open(database)
        opened.append((ledger, Served(ledger)))
        return opened[-1][1]

    yield start
    for ledger, served in opened:
        served.close()
        ledger.close()


def keys_table(store: Store) -> str:
    return "trainledger_events_keys" if store.postgres else "stored_keys"


def test_a_charge_whose_keys_were_deleted_is_still_a_duplicate_after_a_restart(
    database: str, serve: Callable[[str], Served]
) -> None:
    ledger = Ledger.open(database, clock=FakeClock())
    try:
        run_id = ledger.open_run(run_key="charged", name="charged").run_id
        for number in range(CHARGES):
            ledger.charge(account=run_id, charge_id=f"c-{number:04}", amount_usd_micro=CHARGE_USD_MICRO, reason="r")
        head = ledger.head()
    finally:
        ledger.close()
    store = Store(database)
    try:
        store.sql(f"DELETE FROM {keys_table(store)} WHERE key IN ('spend:c-0000', 'spend:c-0001')")
    finally:
        store.close()
    checked = Ledger.open(database, read_only=True)
    try:
        found = checked.verify(views=False)
    finally:
        checked.close()
    assert (found.ok, found.problem) == (False, "INDEX_DISAGREES") and "spend:c-0000" in found.detail
    served = serve(database)
    for charge_id in ("c-0000", "c-0001"):
        retried = served.stubs.spend.Charge(
            spend_pb2.ChargeRequest(account=run_id, charge_id=charge_id, amount_usd_micro=CHARGE_USD_MICRO, reason="r"),
            timeout=30,
        )
        assert retried.duplicate and retried.position < head
    account = served.stubs.spend.GetAccount(spend_pb2.GetAccountRequest(account=run_id, min_position=head), timeout=30)
    assert account.account.committed_usd_micro == CHARGES * CHARGE_USD_MICRO
    assert served.ledger.head() == head
    assert served.stubs.events.Verify(events_pb2.VerifyRequest(skip_views=True), timeout=60).ok


def test_a_damaged_snapshot_is_named_and_its_run_keeps_taking_steps(
    database: str, serve: Callable[[str], Served]
) -> None:
    write_scenario(database)
    store = Store(database)
    try:
        (state,) = store.sql("SELECT state FROM {snapshots}")[0]
        damaged = bytearray(state)
        damaged[0] = 0xC1  # A byte MessagePack never uses.
        store.sql("UPDATE {snapshots} SET state = ?", (bytes(damaged),))
    finally:
        store.close()
    served = serve(database)
    run_id = served.ledger.read_events(from_position=2, limit=1)[0]["originator_id"]
    for first in (201, 211):
        batch = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=list(range(first, first + 10)))
        batch.metrics.add(name="loss", values=[0.25] * 10)
        written = served.stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch), timeout=30)
    state = served.stubs.runs.GetRunState(
        runs_pb2.GetRunStateRequest(run_id=run_id, min_position=written.position), timeout=30
    )
    assert state.state.last_step == 220
    answer = served.stubs.events.Verify(events_pb2.VerifyRequest(), timeout=60)
    assert (answer.ok, answer.broken_at, answer.problem) == (False, SNAPSHOT_POSITION, "SNAPSHOT_DISAGREES")
    assert run_id in answer.detail and "cannot be decoded" in answer.detail


def test_verify_reports_a_log_without_seals_and_seals_nothing(database: str, serve: Callable[[str], Served]) -> None:
    write_scenario(database)
    store = Store(database)
    try:
        store.sql("DELETE FROM {seals}")
        served = serve(database)
        answer = served.stubs.events.Verify(events_pb2.VerifyRequest(skip_views=True), timeout=60)
        assert (answer.ok, answer.broken_at, answer.problem) == (False, 1, "SEAL_MISSING")
        assert store.sql("SELECT COUNT(*) FROM {seals}")[0][0] == 0
    finally:
        store.close()


def test_one_verification_at_a_time(sqlite_database: str, serve: Callable[[str], Served]) -> None:
    write_scenario(sqlite_database)
    served = serve(sqlite_database)
    with served.ledger.integrity.verifying:  # A verification in flight.
        with pytest.raises(grpc.RpcError) as refused:
            served.stubs.events.Verify(events_pb2.VerifyRequest(), timeout=30)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error_info(refused.value).reason == "VERIFY_BUSY"
    assert served.stubs.events.Verify(events_pb2.VerifyRequest(), timeout=60).ok


def test_verify_streams_its_progress_then_its_outcome(sqlite_database: str, serve: Callable[[str], Served]) -> None:
    write_scenario(sqlite_database)
    served = serve(sqlite_database)
    messages = list(served.stubs.events.VerifyStream(events_pb2.VerifyRequest(), timeout=60))
    progress, last = messages[:-1], messages[-1]
    assert last.HasField("outcome") and last.outcome.ok and last.outcome.checked == HEAD
    assert progress and all(not m.HasField("outcome") for m in progress)
    assert {m.stage for m in progress} <= {"chain", "keys", "snapshots", "views"}
    assert [m.checked for m in progress] == sorted(m.checked for m in progress)


def test_a_cancelled_verification_stops_at_its_next_page(
    sqlite_database: str, serve: Callable[[str], Served], caplog: pytest.LogCaptureFixture
) -> None:
    """A log of several pages; the caller cancels after the first message: the verification stops
    with only part of the chain checked, and the next one is let in."""
    ledger = Ledger.open(sqlite_database)
    try:
        run_id = ledger.open_run(run_key="long").run_id
        ledger.start_attempt(run_id=run_id, attempt_id="a")
        for step in range(3_200):
            ledger.append_steps(run_id=run_id, attempt=1, steps=[step], metrics={"loss": [0.5]})
        head = ledger.head()
    finally:
        ledger.close()
    served = serve(sqlite_database)
    caplog.set_level(logging.INFO, logger="trainledger.services")
    call = served.stubs.events.VerifyStream(events_pb2.VerifyRequest(), timeout=60)
    first = next(call)
    assert first.stage == "chain"
    call.cancel()
    deadline = time.monotonic() + 30
    while served.ledger.integrity.verifying.locked() and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped = [r.getMessage() for r in caplog.records if "cancelled by its caller" in r.getMessage()]
    assert len(stopped) == 1
    checked = int(stopped[0].rsplit(", ", 1)[1].split()[0])
    assert checked < head
    assert served.stubs.events.Verify(events_pb2.VerifyRequest(skip_views=True), timeout=60).ok

"""On PostgreSQL a RunState is read in one round trip, its best checkpoint's whole row included,
not one round trip per query: each costs a network wait."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import psycopg  # noqa: E402

from ledger import Ledger  # noqa: E402

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 1, 1, tzinfo=UTC)
# The ledger's clock: the test moves it on.
clock = [NOW]


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    clock[0] = NOW
    app = Ledger.open(url, clock=lambda: clock[0])
    try:
        yield app
    finally:
        app.close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _round_trips(ledger: Ledger) -> list[int]:
    """Counts the round trips the views' reads make from now on (one total, updated)."""
    trips = [0]
    run = ledger.storage.run

    def counting(work: Any) -> Any:
        trips[0] += 1
        return run(work)

    ledger.storage.run = counting  # type: ignore[method-assign]
    return trips


def test_a_run_state_with_a_best_checkpoint_is_read_in_one_round_trip(ledger: Ledger) -> None:
    run = ledger.open_run(run_key="trips", cap_usd_micro=10**9, objective=("eval_loss", "min"))
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    ledger.append_steps(run_id=run.run_id, attempt=1, steps=list(range(1, 41)))
    for step, loss in ((10, 0.5), (20, 0.25), (30, 0.4)):
        ledger.save_checkpoint(
            run_id=run.run_id, attempt=1, step=step, backend="hf", uri=f"/ck/{step}", scores={"eval_loss": loss}
        )
    ledger.save_checkpoint(
        run_id=run.run_id, attempt=1, step=40, backend="tinker", uri="tinker://40", expires_at=NOW + timedelta(hours=1)
    )
    ledger.record_dataset(run_id=run.run_id, role="train", digest="d" * 64, format="chat", rows=12)
    ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=700)
    last = ledger.commit(account=run.run_id, reservation_id="r1", actual_usd_micro=600)
    ledger.wait(last.position)
    clock[0] = NOW + timedelta(hours=2)  # The Tinker checkpoint's handle has expired.

    trips = _round_trips(ledger)
    state = ledger.run_state(run.run_id)

    assert trips[0] == 1
    assert state.last_step == 40
    assert state.checkpoint is not None and state.checkpoint.step == 30
    assert state.best_checkpoint is not None and state.best_checkpoint.step == 20
    assert state.best_checkpoint.handle.uri == "/ck/20" and state.best_checkpoint.scores == {"eval_loss": 0.25}
    assert [c.step for c in state.expired_checkpoints] == [40] and state.expired_checkpoint_count == 1
    assert [d.rows for d in state.datasets] == [12]
    assert state.spend.committed_usd_micro == 600
    assert [a.attempt_id for a in state.attempts] == ["a1"]
    assert state.position >= last.position


def test_reads_of_the_same_statement_after_the_block_go_to_the_database(ledger: Ledger) -> None:
    run = ledger.open_run(run_key="again", cap_usd_micro=None)
    ledger.wait(ledger.head())
    assert ledger.run_state(run.run_id).last_step is None
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    receipt = ledger.append_steps(run_id=run.run_id, attempt=1, steps=[1, 2, 3])
    ledger.wait(receipt.position)
    # Nothing read ahead for the first state is answered to the second.
    assert ledger.run_state(run.run_id).last_step == 3

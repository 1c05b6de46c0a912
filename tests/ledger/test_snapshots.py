"""Aggregates are snapshotted from the saved object; a reopened ledger loads them from the
snapshot and behaves exactly as before (fencing, retries, totals)."""

from __future__ import annotations

from ledger import Ledger
from ledger.domain.accounts import Account
from ledger.domain.base import ledger_id
from ledger.domain.entries import AccountTotals
from ledger.domain.runs import Run


def test_a_run_and_an_account_reload_from_their_snapshots(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    run = ledger.open_run(run_key="snap", cap_usd_micro=10**9)
    ledger.start_attempt(run_id=run.run_id, attempt_id="a")
    for step in range(1, 451):  # 450 batches: the run's versions 200 and 400 are snapshots.
        ledger.append_steps(run_id=run.run_id, attempt=1, steps=[step], metrics={"loss": [1.0 / step]})
    for index in range(550):  # 1,100 account events: a snapshot at 1,000.
        ledger.reserve(account=run.run_id, reservation_id=f"r{index}", amount_usd_micro=10)
        ledger.commit(account=run.run_id, reservation_id=f"r{index}", actual_usd_micro=7)
    first_receipt = ledger.append_steps(run_id=run.run_id, attempt=1, steps=[451], metrics={"loss": [0.5]})
    before = ledger.account_now(run.run_id)
    ledger.close()

    snapshots = Ledger.open(sqlite_database, project=False)
    try:
        assert [s.originator_version for s in snapshots.snapshots.get(ledger_id("run", "snap"))] == [200, 400]
        account_snapshots = list(snapshots.snapshots.get(ledger_id("account", run.run_id)))
        assert [s.originator_version for s in account_snapshots] == [1_000]
    finally:
        snapshots.close()

    reopened = Ledger.open(sqlite_database)
    try:
        loaded = reopened.repository.get(ledger_id("run", "snap"))
        assert isinstance(loaded, Run) and loaded.last_step == 451 and loaded.current_attempt == 1
        assert isinstance(reopened.repository.get(ledger_id("account", run.run_id)), Account)
        retry = reopened.append_steps(run_id=run.run_id, attempt=1, steps=[451], metrics={"loss": [0.5]})
        assert retry.duplicate and retry.position == first_receipt.position
        assert (
            reopened.account_now(run.run_id)
            == before
            == AccountTotals(
                account=run.run_id,
                parent="",
                cap_usd_micro=10**9,
                committed_usd_micro=550 * 7,
                presumed_usd_micro=0,
                pending_usd_micro=0,
                remaining_usd_micro=10**9 - 550 * 7,
                overrun_usd_micro=0,
            )
        )
        again = reopened.commit(account=run.run_id, reservation_id="r549", actual_usd_micro=7)
        assert again.duplicate
        state = reopened.run_state(run.run_id, min_position=reopened.head())
        assert state.last_step == 451 and state.spend.committed_usd_micro == 550 * 7
    finally:
        reopened.close()

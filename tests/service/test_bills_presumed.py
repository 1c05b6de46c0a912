"""Reconciliation of presumed spend over real gRPC: a crashed attempt's hold that the ledger
presumed spent as reserved ($1.00) and that the provider bills at $0.30 is brought down to the
bill (the presumed total goes down, on the run's account and on its parent), and a late commit of
that hold afterwards replaces only what is left presumed, so the spend never goes below nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger import Ledger
from tests.service.support import Served, Stubs, key
from tests.service.test_bills import T10, T12, Clock, line, ts
from tests.service.test_leases import token_basis
from trainledger.v1 import runs_pb2, spend_pb2


@pytest.fixture
def stubs(tmp_path: Path) -> Iterator[Stubs]:
    """A served ledger whose clock stands in the billed hour."""
    ledger = Ledger.open(str(tmp_path / "ledger.db"), clock=Clock(T10))
    served = Served(ledger)
    try:
        yield served.stubs
    finally:
        served.close()
        ledger.close()


def crashed_run(stubs: Stubs, parent: str = "") -> str:
    """A run whose attempt 1 reserved $1.00 (a token basis: presumed spent as reserved) before
    attempt 2 started, billed $0.30 for the hour, with the bill final through 12:00."""
    opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key(), name="n", parent_account=parent), timeout=30)
    run_id = str(opened.state.run.run_id)
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=30)
    stubs.spend.Reserve(
        spend_pb2.ReserveRequest(
            account=run_id, reservation_id="t-1", amount_usd_micro=1_000_000, basis=token_basis(1_000_000), attempt=1
        ),
        timeout=30,
    )
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=30)
    stubs.spend.RecordBilledUsage(
        spend_pb2.RecordBilledUsageRequest(
            provider="acme",
            lines=[line("l1", T10, run_id=run_id, amount_usd_micro=300_000, amount_text="0.30")],
            cost_data_through=ts(T12),
        ),
        timeout=30,
    )
    return run_id


def account(stubs: Stubs, name: str, position: int) -> spend_pb2.Account:
    request = spend_pb2.GetAccountRequest(account=name, min_position=position)
    return stubs.spend.GetAccount(request, timeout=30).account


def test_presumed_spend_is_adjusted_down_to_the_bill(stubs: Stubs) -> None:
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account="team"), timeout=30)
    run_id = crashed_run(stubs, parent="team")
    adjusted = stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=run_id), timeout=30)
    assert [a.amount_usd_micro for a in adjusted.adjustments] == [-700_000]
    state = stubs.runs.GetRunState(
        runs_pb2.GetRunStateRequest(run_id=run_id, min_position=adjusted.position), timeout=30
    ).state
    assert (state.spend.committed_usd_micro, state.spend.presumed_usd_micro) == (0, 300_000)
    run_account = account(stubs, run_id, adjusted.position)
    assert (run_account.committed_usd_micro, run_account.presumed_usd_micro) == (0, 300_000)
    team = account(stubs, "team", adjusted.position)
    assert (team.committed_usd_micro, team.presumed_usd_micro) == (0, 300_000)
    again = stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=run_id), timeout=30)
    assert list(again.adjustments) == []


def test_a_late_commit_after_the_adjustment_replaces_only_what_is_left_presumed(stubs: Stubs) -> None:
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account="team"), timeout=30)
    run_id = crashed_run(stubs, parent="team")
    stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=run_id), timeout=30)
    committed = stubs.spend.Commit(
        spend_pb2.CommitRequest(
            account=run_id, reservation_id="t-1", actual_usd_micro=300_000, basis=token_basis(300_000)
        ),
        timeout=30,
    )
    for name in (run_id, "team"):
        after = account(stubs, name, committed.position)
        assert (after.committed_usd_micro, after.presumed_usd_micro) == (300_000, 0)
    # The late commit agrees with the bill: nothing is left to adjust.
    again = stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=run_id), timeout=30)
    assert list(again.adjustments) == []

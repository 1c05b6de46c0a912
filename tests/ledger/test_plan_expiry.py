"""A plan hold under an injected clock: what its attempt's holds did not draw expires at its TTL
with the sweep, freeing the caps without charging anything, and a plan is never committed, late
or not. On each backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ledger import Ledger, Refused
from ledger.domain.reasons import Reason
from tests.ledger.conftest import FakeClock


def test_a_plan_left_undrawn_expires_at_its_ttl_and_is_never_charged(ledger: Ledger, clock: FakeClock) -> None:
    ledger.open_account(account="team", cap_usd_micro=1_000)
    run_id = ledger.open_run(run_key="planned", cap_usd_micro=900, parent_account="team").run_id
    ledger.start_attempt(run_id=run_id, attempt_id="a1")
    ledger.reserve_plan(account=run_id, reservation_id="plan", amount_usd_micro=600, ttl=timedelta(hours=1), attempt=1)
    clock.advance(minutes=30)
    ledger.reserve(account=run_id, reservation_id="r1", amount_usd_micro=200, ttl=timedelta(hours=2), attempt=1)
    ledger.commit(account=run_id, reservation_id="r1", actual_usd_micro=150)
    assert ledger.account_now("team").pending_usd_micro == 400

    clock.advance(minutes=31)
    assert ledger.expire_reservations() == 1
    for name in (run_id, "team"):
        totals = ledger.account_now(name)
        assert (totals.committed_usd_micro, totals.pending_usd_micro, totals.overrun_usd_micro) == (150, 0, 0), name
    account = ledger.account(run_id, min_position=ledger.head())
    assert account.plan is not None
    assert (account.plan.state, account.plan.drawn_usd_micro, account.plan.held_usd_micro) == ("expired", 200, 0)
    # An expired plan takes no draw: a hold after it is checked against the caps in full.
    ledger.reserve(account=run_id, reservation_id="r2", amount_usd_micro=700, attempt=1)
    assert ledger.account_now(run_id).pending_usd_micro == 700
    with pytest.raises(Refused) as refused:
        ledger.commit(account=run_id, reservation_id="plan", actual_usd_micro=600)
    assert refused.value.reason == Reason.RESERVATION_IS_PLAN


def test_a_plan_past_its_ttl_does_not_block_the_next_one(ledger: Ledger, clock: FakeClock) -> None:
    run_id = ledger.open_run(run_key="replanned", cap_usd_micro=1_000).run_id
    ledger.reserve_plan(account=run_id, reservation_id="first", amount_usd_micro=800, ttl=timedelta(minutes=10))
    with pytest.raises(Refused) as refused:
        ledger.reserve_plan(account=run_id, reservation_id="second", amount_usd_micro=900)
    assert refused.value.reason == Reason.PLAN_ALREADY_HELD
    clock.advance(minutes=10)  # No sweep in between: the new plan expires the old one first.
    ledger.reserve_plan(account=run_id, reservation_id="second", amount_usd_micro=900)
    assert ledger.account_now(run_id).pending_usd_micro == 900

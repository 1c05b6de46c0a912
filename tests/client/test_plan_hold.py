"""RunRecorder.open with a plan: the attempt's whole projected cost is held before its first
billable call, its holds draw it down, the ledger releases what is left when the run finishes,
and a run that cannot afford its plan is refused at open, finished "stopped", having spent
nothing. Expected values are written out here."""

from __future__ import annotations

import pytest

from clients import LedgerClient, RunRecorder, SpendCapExceeded, run_key


def test_a_plan_is_held_at_open_drawn_by_holds_and_released_at_the_end(client: LedgerClient) -> None:
    key = run_key({"test": "plan drawn"})
    with RunRecorder.open(client, run_key=key, cap_usd_micro=10_000, plan_usd_micro=8_000) as recorder:
        # The state kept at open has the plan already.
        assert recorder.state is not None and recorder.state.spend.plan is not None
        opened = recorder.state.spend
        assert (opened.plan.state, opened.plan.held_usd_micro, opened.pending_usd_micro) == ("pending", 8_000, 8_000)
        account = client.get_account(account=recorder.run_id)
        assert (account.pending_usd_micro, account.remaining_usd_micro) == (8_000, 2_000)
        with recorder.reserve(3_000) as hold:
            hold.actual_usd_micro = 2_500
        with recorder.reserve(1_000):
            pass
        # The same plan again (a retry of the open's request) is answered once.
        again = recorder.hold_plan(8_000)
        assert again.duplicate and again.account is not None
        assert again.account.pending_usd_micro == 4_000
        plan = again.account.plan
        assert plan is not None and (plan.planned_usd_micro, plan.drawn_usd_micro, plan.held_usd_micro) == (
            8_000,
            4_000,
            4_000,
        )
    spend = recorder.state.spend
    assert (spend.committed_usd_micro, spend.pending_usd_micro, spend.remaining_usd_micro) == (3_500, 0, 6_500)
    assert spend.plan is not None and (spend.plan.state, spend.plan.held_usd_micro) == ("released", 0)


def test_a_run_that_cannot_afford_its_plan_is_stopped_at_open_and_spends_nothing(client: LedgerClient) -> None:
    key = run_key({"test": "plan refused"})
    with pytest.raises(SpendCapExceeded) as refused:
        RunRecorder.open(client, run_key=key, cap_usd_micro=5_000, plan_usd_micro=6_000)
    assert refused.value.metadata["remaining_usd_micro"] == "5000"
    opened = client.open_run(run_key=key)
    state = opened.state
    assert (state.run.status, state.spend.committed_usd_micro, state.spend.pending_usd_micro) == ("stopped", 0, 0)
    assert state.spend.plan is not None and state.spend.plan.state == "refused"


def test_a_plan_needs_the_ledger_at_open(client: LedgerClient) -> None:
    with pytest.raises(ValueError):
        RunRecorder.open(client, run_key=run_key({"test": "plan deferred"}), plan_usd_micro=1, defer=True)

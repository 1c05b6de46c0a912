"""Leases and abandoned holds over the wire: an attempt whose trainer stops showing signs of life
is read as lost (once, by the server's own sweep), a lost attempt that writes again runs again,
heartbeats keep an idle attempt alive without growing the log, and the holds of a superseded or
lost attempt are settled by the ledger (GPU time pro rata to the last sign of life, anything else
presumed spent as reserved), never at $0; a late commit from the dead attempt replaces that."""

from __future__ import annotations

import json
import time
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration

from tests.service.support import Stubs, batch, error_info, key
from trainledger.v1 import common_pb2, events_pb2, runs_pb2, spend_pb2

# One GPU at $3.60 an hour: one micro-dollar a millisecond.
RATE_USD_MICRO_PER_GPU_HOUR = 3_600_000
LEASE_S = 2


def gpu_basis(milliseconds: int) -> common_pb2.CostBasis:
    return common_pb2.CostBasis(
        price_sheet="test-gpu",
        price_source="https://example.com/gpu",
        gpu=common_pb2.GpuCost(
            gpu_milliseconds=milliseconds, usd_micro_per_gpu_hour=RATE_USD_MICRO_PER_GPU_HOUR, gpu_count=1
        ),
    )


def token_basis(tokens: int) -> common_pb2.CostBasis:
    line = common_pb2.TokenCost(token_class="train", tokens=tokens, usd_micro_per_million_tokens=1_000_000)
    return common_pb2.CostBasis(price_sheet="test-tokens", price_source="https://example.com/t", tokens=[line])


def start(stubs: Stubs, *, lease_s: int | None = LEASE_S, cap: int | None = None) -> str:
    run_id = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key(), cap_usd_micro=cap), timeout=10).state.run.run_id
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1", lease_s=lease_s), timeout=10)
    return run_id


def state(stubs: Stubs, run_id: str, min_position: int = 0) -> runs_pb2.RunState:
    request = runs_pb2.GetRunStateRequest(run_id=run_id, min_position=min_position)
    return stubs.runs.GetRunState(request, timeout=10).state


def wait_for_status(stubs: Stubs, run_id: str, status: int, within_s: float) -> runs_pb2.RunState:
    deadline = time.monotonic() + within_s
    while True:
        current = state(stubs, run_id)
        if current.run.status == status or time.monotonic() > deadline:
            return current
        time.sleep(0.1)


def events(stubs: Stubs, kind: str, originator_id: str | None = None) -> list[dict[str, Any]]:
    found = []
    for event in stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=1, types=[kind]), timeout=10):
        if originator_id is None or event.originator_id == originator_id:
            found.append({"recorded_at": event.recorded_at.ToDatetime().timestamp(), **json.loads(event.data_json)})
    return found


def account_id(stubs: Stubs, run_id: str) -> str:
    """The aggregate id of a run's account, as its events carry it."""
    [opened] = [
        event.originator_id
        for event in stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=1, types=["Account.Opened"]))
        if json.loads(event.data_json)["name"] == run_id
    ]
    return opened


class TestLeases:
    def test_a_silent_attempt_reads_lost_within_its_lease_with_its_last_sign_of_life(self, stubs: Stubs) -> None:
        run_id = start(stubs)
        before = time.time()
        stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(1, 4))), timeout=10)
        after = time.time()
        lost = wait_for_status(stubs, run_id, common_pb2.RUN_STATUS_LOST, LEASE_S + 5)
        assert lost.run.status == common_pb2.RUN_STATUS_LOST
        attempt = lost.attempts[-1]
        assert attempt.lease_s == LEASE_S
        assert before - 0.01 <= attempt.last_seen_at.ToDatetime().timestamp() <= after + 0.01
        assert attempt.HasField("lost_at")
        [recorded] = events(stubs, "AttemptLost", run_id)
        assert (recorded["attempt"], recorded["lease_s"]) == (1, LEASE_S)
        assert recorded["recorded_at"] >= attempt.last_seen_at.ToDatetime().timestamp() + LEASE_S
        listed = stubs.runs.ListRuns(runs_pb2.ListRunsRequest(status=common_pb2.RUN_STATUS_LOST), timeout=10)
        assert run_id in [run.run_id for run in listed.runs]

    def test_a_lost_attempt_that_writes_again_is_running_again_and_the_gap_stays(self, stubs: Stubs) -> None:
        run_id = start(stubs)
        assert wait_for_status(stubs, run_id, common_pb2.RUN_STATUS_LOST, LEASE_S + 5).run.status == (
            common_pb2.RUN_STATUS_LOST
        )
        appended = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(1, 3))), timeout=10)
        back = state(stubs, run_id, appended.position)
        assert back.run.status == common_pb2.RUN_STATUS_RUNNING
        assert back.last_step == 2
        assert not back.attempts[-1].HasField("lost_at")
        [lost] = events(stubs, "AttemptLost", run_id)
        [returned] = events(stubs, "AttemptReturned", run_id)
        assert returned["recorded_at"] > lost["recorded_at"]

    def test_heartbeats_keep_an_idle_attempt_running_and_are_recorded_sparsely(self, stubs: Stubs) -> None:
        run_id = start(stubs)
        began = time.monotonic()
        calls = 0
        while time.monotonic() - began < LEASE_S * 2:
            stubs.runs.Heartbeat(runs_pb2.HeartbeatRequest(run_id=run_id, attempt=1), timeout=10)
            calls += 1
            time.sleep(0.01)
        held_s = time.monotonic() - began
        assert state(stubs, run_id).run.status == common_pb2.RUN_STATUS_RUNNING
        assert events(stubs, "AttemptLost", run_id) == []
        recorded = len(events(stubs, "AttemptHeartbeat", run_id))
        # One recorded per twentieth of the lease at most, however often the client beats.
        assert 0 < recorded <= held_s / (LEASE_S / 20) + 1 < calls

    def test_a_watcher_is_told_the_run_is_lost(self, stubs: Stubs) -> None:
        run_id = start(stubs)
        stream = stubs.runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=LEASE_S + 10)
        try:
            first = next(stream)
            assert first.state.run.status == common_pb2.RUN_STATUS_RUNNING
            update = next(stream)
            assert update.event_type.endswith("AttemptLost")
            assert "run.status" in update.state_mask.paths
            assert update.state.run.status == common_pb2.RUN_STATUS_LOST
        finally:
            stream.cancel()

    def test_a_heartbeat_of_a_superseded_attempt_is_refused(self, stubs: Stubs) -> None:
        run_id = start(stubs)
        stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
        with pytest.raises(grpc.RpcError) as caught:
            stubs.runs.Heartbeat(runs_pb2.HeartbeatRequest(run_id=run_id, attempt=1), timeout=10)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert error_info(caught.value).reason == "ATTEMPT_SUPERSEDED"

    @pytest.mark.parametrize("lease_s", [-1, 0, 1, 86_401, 2**31 - 1])
    def test_a_lease_out_of_range_is_refused(self, stubs: Stubs, lease_s: int) -> None:
        run_id = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), timeout=10).state.run.run_id
        with pytest.raises(grpc.RpcError) as caught:
            stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, lease_s=lease_s), timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        info = error_info(caught.value)
        assert (info.reason, info.metadata["field"]) == ("INVALID_LEASE", "lease_s")
        assert len(state(stubs, run_id).attempts) == 0

    def test_an_attempt_started_without_a_lease_holds_the_default(self, stubs: Stubs) -> None:
        run_id = start(stubs, lease_s=None)
        assert state(stubs, run_id).attempts[-1].lease_s == 60


class TestAbandonedHolds:
    def test_a_superseded_attempts_gpu_hold_is_charged_pro_rata_not_at_zero(self, stubs: Stubs) -> None:
        run_id = start(stubs, lease_s=60, cap=1_000_000)
        reserve_before = time.time()
        stubs.spend.Reserve(
            spend_pb2.ReserveRequest(
                account=run_id, reservation_id="gpu-1", amount_usd_micro=60_000, basis=gpu_basis(60_000), attempt=1
            ),
            timeout=10,
        )
        reserve_after = time.time()
        time.sleep(1.0)
        seen_before = time.time()
        stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(1, 3))), timeout=10)
        seen_after = time.time()
        time.sleep(1.0)  # The trainer is dead: no sign of life after the steps.
        second = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
        [settled] = events(stubs, "SpendSettled", account_id(stubs, run_id))
        assert (settled["reason"], settled["method"], settled["reserved"]) == ("ATTEMPT_SUPERSEDED", "pro_rata", 60_000)
        # One micro-dollar a millisecond, from the grant to the last sign of life.
        low, high = (seen_before - reserve_after) * 1000, (seen_after - reserve_before) * 1000
        assert low - 10 <= settled["amount"] <= high + 10
        spend = state(stubs, run_id, second.position).spend
        assert (spend.committed_usd_micro, spend.pending_usd_micro) == (0, 0)
        assert spend.presumed_usd_micro == settled["amount"]
        assert spend.remaining_usd_micro == 1_000_000 - settled["amount"]
        request = spend_pb2.GetAccountRequest(account=run_id, min_position=second.position)
        account = stubs.spend.GetAccount(request, timeout=10).account
        assert account.presumed_usd_micro == settled["amount"]

    def test_a_hold_of_tokens_is_presumed_spent_as_reserved_and_a_late_commit_replaces_it(self, stubs: Stubs) -> None:
        run_id = start(stubs, lease_s=60, cap=10_000)
        stubs.spend.Reserve(
            spend_pb2.ReserveRequest(
                account=run_id, reservation_id="t-1", amount_usd_micro=4_000, basis=token_basis(4_000), attempt=1
            ),
            timeout=10,
        )
        second = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
        [settled] = events(stubs, "SpendSettled", account_id(stubs, run_id))
        assert (settled["method"], settled["amount"]) == ("as_reserved", 4_000)
        assert state(stubs, run_id, second.position).spend.presumed_usd_micro == 4_000
        # The dead attempt's commit arrives after all: the actual replaces the presumption.
        committed = stubs.spend.Commit(
            spend_pb2.CommitRequest(
                account=run_id, reservation_id="t-1", actual_usd_micro=2_500, basis=token_basis(2_500)
            ),
            timeout=10,
        )
        assert committed.overrun_usd_micro == 0
        [late] = events(stubs, "SpendCommitted", account_id(stubs, run_id))
        assert (late["late"], late["actual"], late["replaced"]) == (True, 2_500, 4_000)
        spend = stubs.runs.GetRunState(
            runs_pb2.GetRunStateRequest(run_id=run_id, min_position=committed.position), timeout=10
        ).state.spend
        assert (spend.committed_usd_micro, spend.presumed_usd_micro, spend.remaining_usd_micro) == (2_500, 0, 7_500)

    def test_a_run_list_shows_what_the_ledger_presumed_spent(self, stubs: Stubs) -> None:
        run_id = start(stubs, lease_s=60, cap=10_000)
        stubs.spend.Reserve(
            spend_pb2.ReserveRequest(
                account=run_id, reservation_id="t-1", amount_usd_micro=4_000, basis=token_basis(4_000), attempt=1
            ),
            timeout=10,
        )
        second = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
        request = runs_pb2.ListRunsRequest(min_position=second.position)
        [summary] = [r for r in stubs.runs.ListRuns(request, timeout=10).runs if r.run_id == run_id]
        assert (summary.committed_usd_micro, summary.presumed_usd_micro, summary.pending_usd_micro) == (0, 4_000, 0)

    def test_a_lost_attempts_hold_is_settled_with_the_loss(self, stubs: Stubs) -> None:
        run_id = start(stubs, cap=1_000_000)
        stubs.spend.Reserve(
            spend_pb2.ReserveRequest(
                account=run_id,
                reservation_id="gpu-lost",
                amount_usd_micro=600_000,
                basis=gpu_basis(600_000),
                ttl=Duration(seconds=3600),
                attempt=1,
            ),
            timeout=10,
        )
        lost = wait_for_status(stubs, run_id, common_pb2.RUN_STATUS_LOST, LEASE_S + 5)
        assert lost.run.status == common_pb2.RUN_STATUS_LOST
        [settled] = events(stubs, "SpendSettled", account_id(stubs, run_id))
        assert (settled["reason"], settled["method"]) == ("ATTEMPT_LOST", "pro_rata")
        # Held from the grant to the last sign of life (the attempt's start, just before): a few ms.
        assert 0 <= settled["amount"] < 600_000
        spend = state(stubs, run_id).spend
        assert (spend.pending_usd_micro, spend.presumed_usd_micro) == (0, settled["amount"])


def test_a_lost_attempts_plan_left_undrawn_is_released_and_a_returning_attempt_plans_again(stubs: Stubs) -> None:
    run_id = start(stubs, cap=1_000)
    plan = spend_pb2.ReservePlanRequest(account=run_id, reservation_id="plan", amount_usd_micro=800, attempt=1)
    stubs.spend.ReservePlan(plan, timeout=10)
    stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id="r1", amount_usd_micro=100, attempt=1), timeout=10
    )
    stubs.spend.Commit(spend_pb2.CommitRequest(account=run_id, reservation_id="r1", actual_usd_micro=100), timeout=10)
    lost = wait_for_status(stubs, run_id, common_pb2.RUN_STATUS_LOST, LEASE_S + 5)
    assert lost.run.status == common_pb2.RUN_STATUS_LOST
    spend = state(stubs, run_id, lost.position).spend
    assert (spend.committed_usd_micro, spend.pending_usd_micro, spend.remaining_usd_micro) == (100, 0, 900)
    assert (spend.plan.state, spend.plan.planned_usd_micro, spend.plan.drawn_usd_micro) == ("released", 800, 100)
    [released] = [e for e in events(stubs, "SpendReleased", account_id(stubs, run_id)) if e["reservation_id"] == "plan"]
    assert (released["amount"], released["reason"]) == (700, "ATTEMPT_LOST")
    # The attempt comes back and plans again.
    again = spend_pb2.ReservePlanRequest(account=run_id, reservation_id="plan-2", amount_usd_micro=900, attempt=1)
    answer = stubs.spend.ReservePlan(again, timeout=10)
    assert (answer.account.pending_usd_micro, answer.account.remaining_usd_micro) == (900, 0)

"""A run's plan reserved up front, over the wire: a run that cannot afford its plan is refused
before it spends anything, the attempt's reservations draw the plan down without counting the cap
twice, what is left is released when the run finishes, is retracted or its attempt is fenced off,
and retries are answered as the first answer. Expected values are written out here."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration

from tests.service.support import Stubs, error_info, key, open_run
from trainledger.v1 import common_pb2, runs_pb2, spend_pb2

Code = grpc.StatusCode


def refusal(call: Any, request: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=10)
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata)


def plan_request(account: str, amount: int, plan_id: str = "plan", attempt: int = 1) -> spend_pb2.ReservePlanRequest:
    return spend_pb2.ReservePlanRequest(
        account=account, reservation_id=plan_id, amount_usd_micro=amount, attempt=attempt
    )


def reserve(stubs: Stubs, account: str, reservation_id: str, amount: int, attempt: int = 1) -> spend_pb2.Account:
    request = spend_pb2.ReserveRequest(
        account=account, reservation_id=reservation_id, amount_usd_micro=amount, attempt=attempt
    )
    return stubs.spend.Reserve(request, timeout=10).account


def commit(stubs: Stubs, account: str, reservation_id: str, actual: int) -> spend_pb2.CommitResponse:
    request = spend_pb2.CommitRequest(account=account, reservation_id=reservation_id, actual_usd_micro=actual)
    return stubs.spend.Commit(request, timeout=10)


def totals(account: spend_pb2.Account) -> tuple[int, int, int | None]:
    """(committed, pending, remaining) of an account."""
    remaining = account.remaining_usd_micro if account.HasField("remaining_usd_micro") else None
    return account.committed_usd_micro, account.pending_usd_micro, remaining


def plan_of(hold: Any) -> tuple[str, int, int, int]:
    """(state, planned, drawn, held) of a PlanHold."""
    return hold.state, hold.planned_usd_micro, hold.drawn_usd_micro, hold.held_usd_micro


def account_of(stubs: Stubs, account: str, position: int) -> spend_pb2.Account:
    request = spend_pb2.GetAccountRequest(account=account, min_position=position)
    return stubs.spend.GetAccount(request, timeout=10).account


def test_a_run_that_cannot_afford_its_plan_spends_nothing(stubs: Stubs) -> None:
    team = f"team-{key()}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=team, cap_usd_micro=1_000), timeout=10)
    other = open_run(stubs, parent_account=team).state.run.run_id
    reserve(stubs, other, "other-hold", 600)
    run_id = open_run(stubs, cap=5_000, parent_account=team).state.run.run_id

    code, reason, metadata = refusal(stubs.spend.ReservePlan, plan_request(run_id, 500))
    assert (code, reason, metadata["account"], metadata["remaining_usd_micro"]) == (
        Code.RESOURCE_EXHAUSTED,
        "SPEND_CAP_EXCEEDED",
        team,
        "400",
    )
    # The same request again is the same refusal; nothing was held, and the refusal is on record.
    assert refusal(stubs.spend.ReservePlan, plan_request(run_id, 500))[:2] == (
        Code.RESOURCE_EXHAUSTED,
        "SPEND_CAP_EXCEEDED",
    )
    own = refusal(stubs.spend.ReservePlan, plan_request(run_id, 6_000, "too-big"))
    assert (own[1], own[2]["account"], own[2]["remaining_usd_micro"]) == ("SPEND_CAP_EXCEEDED", run_id, "5000")
    held = stubs.spend.Reserve(spend_pb2.ReserveRequest(account=run_id, reservation_id="r", amount_usd_micro=1))
    account = account_of(stubs, run_id, held.position)
    assert totals(account)[:2] == (0, 1) and plan_of(account.plan) == ("refused", 6_000, 0, 0)
    entries = stubs.spend.ListReservations(
        spend_pb2.ListReservationsRequest(account=run_id, min_position=held.position), timeout=10
    ).reservations
    assert [(e.reservation_id, e.kind, e.state) for e in entries] == [
        ("plan", "plan", "refused"),
        ("too-big", "plan", "refused"),
        ("r", "reservation", "pending"),
    ]


def test_draws_never_count_against_the_cap_twice(stubs: Stubs) -> None:
    team = f"team-{key()}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=team, cap_usd_micro=10_000), timeout=10)
    run_id = open_run(stubs, cap=1_000, parent_account=team).state.run.run_id

    planned = stubs.spend.ReservePlan(plan_request(run_id, 800), timeout=10)
    assert (totals(planned.account), plan_of(planned.account.plan)) == ((0, 800, 200), ("pending", 800, 0, 800))
    # 300 drawn from the plan: nothing more is pending, and the same 200 remains.
    assert totals(reserve(stubs, run_id, "r1", 300)) == (0, 800, 200)
    assert totals(commit(stubs, run_id, "r1", 250).account) == (250, 500, 250)
    # 500 drawn from the plan and 100 from what remained beyond it.
    assert totals(reserve(stubs, run_id, "r2", 600)) == (250, 600, 150)
    code, reason, metadata = refusal(
        stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="r3", amount_usd_micro=200)
    )
    assert (code, reason, metadata["remaining_usd_micro"]) == (Code.RESOURCE_EXHAUSTED, "SPEND_CAP_EXCEEDED", "150")
    done = commit(stubs, run_id, "r2", 600)
    account, parent = account_of(stubs, run_id, done.position), account_of(stubs, team, done.position)
    assert totals(account) == (850, 0, 150) and plan_of(account.plan) == ("pending", 800, 800, 0)
    assert totals(parent) == (850, 0, 9_150)


def test_finishing_releases_what_the_plan_left(stubs: Stubs) -> None:
    team = f"team-{key()}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=team, cap_usd_micro=10_000), timeout=10)
    run_id = open_run(stubs, cap=1_000, parent_account=team).state.run.run_id
    stubs.spend.ReservePlan(plan_request(run_id, 800), timeout=10)
    reserve(stubs, run_id, "r1", 300)
    commit(stubs, run_id, "r1", 300)
    finished = stubs.runs.FinishRun(
        runs_pb2.FinishRunRequest(run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE), timeout=10
    )
    account = account_of(stubs, run_id, finished.position)
    assert totals(account) == (300, 0, 700) and plan_of(account.plan) == ("released", 800, 300, 0)
    assert totals(account_of(stubs, team, finished.position)) == (300, 0, 9_700)
    state = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id, min_position=finished.position))
    assert plan_of(state.state.spend.plan) == ("released", 800, 300, 0)
    # The plan's undrawn part was released, never charged.
    entries = stubs.spend.ListReservations(spend_pb2.ListReservationsRequest(account=run_id), timeout=10).reservations
    assert [(e.kind, e.state, e.amount_usd_micro, e.actual_usd_micro, e.reason) for e in entries][0] == (
        "plan",
        "released",
        800,
        300,
        "the run finished",
    )


def test_a_new_attempt_or_a_retraction_releases_the_plan_left_undrawn(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=1_000).state.run.run_id
    stubs.spend.ReservePlan(plan_request(run_id, 800), timeout=10)
    reserve(stubs, run_id, "r1", 100)
    commit(stubs, run_id, "r1", 100)
    started = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
    account = account_of(stubs, run_id, started.position)
    assert totals(account) == (100, 0, 900) and plan_of(account.plan) == ("released", 800, 100, 0)
    # The new attempt reserves its own plan; a hold of no attempt would not draw it (the old
    # attempt's are refused: fenced off).
    stubs.spend.ReservePlan(plan_request(run_id, 500, "plan-2", attempt=2), timeout=10)
    assert totals(reserve(stubs, run_id, "old", 50, attempt=0)) == (100, 550, 350)
    retracted = stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="bad data"), timeout=10)
    account = account_of(stubs, run_id, retracted.position)
    assert totals(account) == (100, 50, 850) and plan_of(account.plan) == ("released", 500, 0, 0)


def test_plan_requests_are_checked_and_retries_answered_once(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=1_000).state.run.run_id
    first = stubs.spend.ReservePlan(plan_request(run_id, 800), timeout=10)
    again = stubs.spend.ReservePlan(plan_request(run_id, 800), timeout=10)
    assert (again.duplicate, again.position, again.expires_at) == (True, first.position, first.expires_at)
    assert totals(again.account) == (0, 800, 200)
    refused = [
        (stubs.spend.ReservePlan, plan_request(run_id, 700), (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")),
        (stubs.spend.ReservePlan, plan_request(run_id, 100, "other"), (Code.FAILED_PRECONDITION, "PLAN_ALREADY_HELD")),
        (
            stubs.spend.Reserve,
            spend_pb2.ReserveRequest(account=run_id, reservation_id="plan", amount_usd_micro=800, attempt=1),
            (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD"),
        ),
        (
            stubs.spend.Commit,
            spend_pb2.CommitRequest(account=run_id, reservation_id="plan", actual_usd_micro=800),
            (Code.FAILED_PRECONDITION, "RESERVATION_IS_PLAN"),
        ),
        (stubs.spend.ReservePlan, plan_request(run_id, 0, "zero"), (Code.INVALID_ARGUMENT, "OUT_OF_RANGE")),
        (stubs.spend.ReservePlan, plan_request(run_id, -1, "negative"), (Code.INVALID_ARGUMENT, "NEGATIVE_AMOUNT")),
        (
            stubs.spend.ReservePlan,
            spend_pb2.ReservePlanRequest(
                account=run_id, reservation_id="long", amount_usd_micro=1, ttl=Duration(seconds=8 * 86_400)
            ),
            (Code.INVALID_ARGUMENT, "INVALID_TTL"),
        ),
        (stubs.spend.ReservePlan, plan_request(run_id, 1, ""), (Code.INVALID_ARGUMENT, "MISSING_FIELD")),
        (stubs.spend.ReservePlan, plan_request("no-such-account", 1), (Code.NOT_FOUND, "ACCOUNT_NOT_FOUND")),
    ]
    for call, request, expected in refused:
        assert refusal(call, request)[:2] == expected, request
    # Released on request, what is left of it goes back; a second release answers the first.
    request = spend_pb2.ReleaseRequest(account=run_id, reservation_id="plan", reason="plan changed")
    released = stubs.spend.Release(request, timeout=10)
    repeated = stubs.spend.Release(request, timeout=10)
    assert totals(released.account) == (0, 0, 1_000) and (repeated.duplicate, repeated.position) == (
        True,
        released.position,
    )

"""The spend record stays right over the wire: ids are remembered however long ago they were used,
a cap given on reopen binds, a run's account cannot be taken over, and a new attempt gives back
the holds of the attempts it fences off."""

from __future__ import annotations

import sqlite3
import time
import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger import Ledger
from ledger.domain.accounts import SETTLED_WINDOW
from ledger.domain.runs import BATCH_WINDOW
from tests.service.support import Served, Stubs, batch, error_info, key, open_run
from trainledger.v1 import common_pb2, runs_pb2, spend_pb2

Code = grpc.StatusCode


def account_of(stubs: Stubs, account: str, min_position: int = 0) -> spend_pb2.Account:
    return stubs.spend.GetAccount(
        spend_pb2.GetAccountRequest(account=account, min_position=min_position), timeout=10
    ).account


def charge(stubs: Stubs, account: str, charge_id: str, amount: int) -> spend_pb2.ChargeResponse:
    return stubs.spend.Charge(
        spend_pb2.ChargeRequest(account=account, charge_id=charge_id, amount_usd_micro=amount), timeout=10
    )


def reason_of(call, request) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=10)
    return caught.value.code(), error_info(caught.value).reason


@pytest.mark.slow
def test_an_old_charge_and_reservation_id_stay_duplicates_beyond_any_window(served: Served, stubs: Stubs) -> None:
    account = f"team-{uuid.uuid4().hex[:8]}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=account), timeout=10)
    first = charge(stubs, account, "charge-0", 1_000_000)
    held = stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=account, reservation_id="hold-0", amount_usd_micro=500), timeout=10
    )
    stubs.spend.Commit(
        spend_pb2.CommitRequest(account=account, reservation_id="hold-0", actual_usd_micro=400), timeout=10
    )
    for number in range(1, SETTLED_WINDOW + 2):
        charge(stubs, account, f"charge-{number}", 1_000)

    again = charge(stubs, account, "charge-0", 1_000_000)
    assert (again.duplicate, again.position) == (True, first.position)
    assert reason_of(
        stubs.spend.Charge, spend_pb2.ChargeRequest(account=account, charge_id="charge-0", amount_usd_micro=999)
    ) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    reserved_again = stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=account, reservation_id="hold-0", amount_usd_micro=500), timeout=10
    )
    assert (reserved_again.duplicate, reserved_again.position) == (True, held.position)
    assert reason_of(
        stubs.spend.Reserve, spend_pb2.ReserveRequest(account=account, reservation_id="charge-0", amount_usd_micro=5)
    ) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    recommit = stubs.spend.Commit(
        spend_pb2.CommitRequest(account=account, reservation_id="hold-0", actual_usd_micro=400), timeout=10
    )
    assert recommit.duplicate

    # 1,000,000 + 2,001 charges of 1,000 + the commit of 400: counted once each.
    totals = account_of(stubs, account, min_position=recommit.position)
    assert (totals.committed_usd_micro, totals.pending_usd_micro) == (1_000_000 + 2_001_000 + 400, 0)
    # The views kept projecting: an unrelated run opens and reads.
    other = open_run(stubs)
    assert served.ledger.projector.error is None
    assert account_of(stubs, other.state.run.run_id, min_position=other.position).committed_usd_micro == 0


@pytest.mark.slow
def test_an_old_step_batch_resent_is_a_duplicate_beyond_any_window(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    first = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(0, 2))), timeout=10)
    requests = (
        runs_pb2.RecordStepsRequest(sequence=n, batch=batch(run_id, range(2 * n, 2 * n + 2)))
        for n in range(1, BATCH_WINDOW + 2)
    )
    acks = list(stubs.runs.RecordSteps(requests, timeout=120))
    assert [ack.sequence for ack in acks] == list(range(1, BATCH_WINDOW + 2))
    assert not any(ack.duplicate for ack in acks)

    again = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(0, 2))), timeout=10)
    assert (again.duplicate, again.position) == (True, first.position)
    assert reason_of(
        stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(0, 2), loss=0.25))
    ) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")


def test_a_cap_given_on_reopen_is_recorded(served: Served, stubs: Stubs) -> None:
    run_key = key()
    opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key), timeout=10)
    run_id = opened.state.run.run_id
    reopened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key, cap_usd_micro=1_000), timeout=10)
    assert not reopened.created
    assert account_of(stubs, run_id, min_position=reopened.position).cap_usd_micro == 1_000
    assert reason_of(
        stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="too-much", amount_usd_micro=1_001)
    ) == (Code.RESOURCE_EXHAUSTED, "SPEND_CAP_EXCEEDED")
    # Absent leaves the cap; the same cap again records nothing new.
    head = served.ledger.head()
    stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key), timeout=10)
    stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key, cap_usd_micro=1_000), timeout=10)
    assert served.ledger.head() == head
    assert account_of(stubs, run_id).cap_usd_micro == 1_000
    # Below what is committed and held: refused, nothing changes.
    stubs.spend.Reserve(spend_pb2.ReserveRequest(account=run_id, reservation_id="h", amount_usd_micro=600), timeout=10)
    assert reason_of(stubs.runs.OpenRun, runs_pb2.OpenRunRequest(run_key=run_key, cap_usd_micro=500)) == (
        Code.FAILED_PRECONDITION,
        "CAP_BELOW_SPEND",
    )
    assert account_of(stubs, run_id).cap_usd_micro == 1_000


def test_a_different_parent_on_reopen_is_refused(stubs: Stubs) -> None:
    team = f"team-{uuid.uuid4().hex[:8]}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=team, cap_usd_micro=10_000), timeout=10)
    run_key = key()
    stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key), timeout=10)
    assert reason_of(stubs.runs.OpenRun, runs_pb2.OpenRunRequest(run_key=run_key, parent_account=team)) == (
        Code.FAILED_PRECONDITION,
        "PARENT_ACCOUNT_DIFFERS",
    )


def test_a_run_account_cannot_be_opened_before_its_run(stubs: Stubs) -> None:
    team = f"team-{uuid.uuid4().hex[:8]}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=team, cap_usd_micro=100_000), timeout=10)
    run_key = key()
    run_id = str(uuid.uuid5(uuid.UUID("6f1d3c52-8a4e-5b7a-9c3d-2e8f4a1b7c60"), f"run:{run_key}"))
    assert reason_of(stubs.spend.OpenAccount, spend_pb2.OpenAccountRequest(account=run_id)) == (
        Code.INVALID_ARGUMENT,
        "ACCOUNT_NAME_RESERVED",
    )
    assert reason_of(stubs.spend.OpenAccount, spend_pb2.OpenAccountRequest(account=run_id.upper())) == (
        Code.INVALID_ARGUMENT,
        "ACCOUNT_NAME_RESERVED",
    )

    opened = stubs.runs.OpenRun(
        runs_pb2.OpenRunRequest(run_key=run_key, cap_usd_micro=5, parent_account=team), timeout=10
    )
    assert opened.created and opened.state.run.run_id == run_id
    run_account = account_of(stubs, run_id, min_position=opened.position)
    assert (run_account.cap_usd_micro, run_account.parent) == (5, team)
    assert reason_of(
        stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="big", amount_usd_micro=500_000)
    ) == (Code.RESOURCE_EXHAUSTED, "SPEND_CAP_EXCEEDED")
    held = stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id="small", amount_usd_micro=5), timeout=10
    )
    assert account_of(stubs, team, min_position=held.position).pending_usd_micro == 5


def test_a_new_attempt_settles_the_holds_of_the_attempts_it_fences(stubs: Stubs) -> None:
    opened = open_run(stubs, cap=1_000)
    run_id = opened.state.run.run_id
    stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id="zombie", amount_usd_micro=800, attempt=1), timeout=10
    )
    started = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
    assert started.attempt == 2
    # Not a GPU-time hold: presumed spent as reserved, not written off at $0.
    totals = account_of(stubs, run_id, min_position=started.position)
    assert (totals.pending_usd_micro, totals.presumed_usd_micro, totals.remaining_usd_micro) == (0, 800, 200)
    listed = stubs.spend.ListReservations(
        spend_pb2.ListReservationsRequest(account=run_id, min_position=started.position), timeout=10
    ).reservations
    assert [(r.reservation_id, r.state, r.actual_usd_micro, r.reason) for r in listed] == [
        ("zombie", "settled", 800, "ATTEMPT_SUPERSEDED: presumed spent as reserved")
    ]

    # The new attempt can use what remains; the zombie's late commit replaces the presumption.
    stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id="live", amount_usd_micro=200, attempt=2), timeout=10
    )
    late = stubs.spend.Commit(
        spend_pb2.CommitRequest(account=run_id, reservation_id="zombie", actual_usd_micro=900), timeout=10
    )
    assert late.overrun_usd_micro == 900 - 800
    totals = account_of(stubs, run_id, min_position=late.position)
    assert (totals.committed_usd_micro, totals.presumed_usd_micro, totals.pending_usd_micro) == (900, 0, 200)
    assert totals.overrun_usd_micro == 100
    # A retry of the start settles nothing more.
    again = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
    assert again.duplicate and again.position == started.position


def test_an_event_that_cannot_be_projected_stops_projection_loudly(tmp_path, caplog) -> None:
    """A view row that collides with an event (planted by hand: no version of the ledger ever
    recorded a checkpoint twice) stops projection at that event: reads say PROJECTION_FAILED at
    once, health turns NOT_SERVING, the log names the position; writes are still recorded."""
    path = tmp_path / "ledger.db"
    ledger = Ledger.open(str(path))
    served = Served(ledger)
    try:
        stubs = served.stubs
        run_id = open_run(stubs).state.run.run_id
        with sqlite3.connect(path) as side:
            side.execute(
                "INSERT INTO view_checkpoints (run_id, attempt, step, backend, uri, fidelity, sampler_uri,"
                " final, saved_at, expires_at, digest, superseded) VALUES (?, 1, 5, 'hf', 'file:///x',"
                " 'weights', '', 0, 0, NULL, '', 0)",
                (run_id,),
            )
        saved = stubs.runs.SaveCheckpoint(
            runs_pb2.SaveCheckpointRequest(
                run_id=run_id, attempt=1, step=5, handle=common_pb2.StateHandle(backend="hf", uri="file:///ckpt/5")
            ),
            timeout=10,
        )
        code, reason = reason_of(
            stubs.runs.GetRunState, runs_pb2.GetRunStateRequest(run_id=run_id, min_position=saved.position)
        )
        assert (code, reason) == (Code.UNAVAILABLE, "PROJECTION_FAILED")
        assert ledger.projector.failure is not None and ledger.projector.failure.position == saved.position
        assert ledger.storage.tracking_positions()["runs"] == saved.position - 1
        health = health_pb2_grpc.HealthStub(stubs.channel)
        deadline = time.monotonic() + 15
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        while health.Check(health_pb2.HealthCheckRequest(), timeout=5).status != not_serving:
            assert time.monotonic() < deadline, "health never turned NOT_SERVING"
            time.sleep(0.1)
        assert any(f"position {saved.position}" in record.getMessage() for record in caplog.records)
        # Writes go on being recorded: nothing acknowledged is lost while the views are stopped.
        again = stubs.spend.Reserve(
            spend_pb2.ReserveRequest(account=run_id, reservation_id="r2", amount_usd_micro=5), timeout=10
        )
        assert again.position > saved.position
    finally:
        served.close()
        ledger.close()

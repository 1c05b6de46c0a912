"""A new attempt fences the old one for spend too: a superseded attempt (a zombie trainer still
running after its job was restarted) may not take new holds or plans on the run's account. Its
holds would be settled against a sign of life it can no longer leave (its heartbeats are refused),
at $0 for GPU time it really used. Its holds granted before stay its to commit."""

from __future__ import annotations

import grpc
import pytest

from tests.service.support import Stubs, error_info
from tests.service.test_leases import gpu_basis, start
from trainledger.v1 import runs_pb2, spend_pb2


def test_a_superseded_attempt_takes_no_new_hold_or_plan_and_commits_its_old_one(stubs: Stubs) -> None:
    run_id = start(stubs, lease_s=60, cap=10_000_000)
    old = spend_pb2.ReserveRequest(
        account=run_id, reservation_id="before", amount_usd_micro=1_000, basis=gpu_basis(1_000), attempt=1
    )
    stubs.spend.Reserve(old, timeout=10)
    stubs.spend.Commit(
        spend_pb2.CommitRequest(account=run_id, reservation_id="before", actual_usd_micro=500, basis=gpu_basis(500)),
        timeout=10,
    )
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
    # A retry of the hold granted before is answered as it was.
    assert stubs.spend.Reserve(old, timeout=10).duplicate
    zombie = spend_pb2.ReserveRequest(
        account=run_id, reservation_id="zombie", amount_usd_micro=600_000, basis=gpu_basis(600_000), attempt=1
    )
    plan = spend_pb2.ReservePlanRequest(account=run_id, reservation_id="zombie-plan", amount_usd_micro=1, attempt=1)
    for call, request in ((stubs.spend.Reserve, zombie), (stubs.spend.ReservePlan, plan)):
        with pytest.raises(grpc.RpcError) as refused:
            call(request, timeout=10)
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        info = error_info(refused.value)
        assert info.reason == "ATTEMPT_SUPERSEDED"
        assert (info.metadata["attempt"], info.metadata["current_attempt"]) == ("1", "2")
    account = stubs.spend.GetAccount(spend_pb2.GetAccountRequest(account=run_id), timeout=10).account
    assert (account.pending_usd_micro, account.committed_usd_micro) == (0, 500)
    # The current attempt reserves as before.
    current = spend_pb2.ReserveRequest(
        account=run_id, reservation_id="current", amount_usd_micro=1_000, basis=gpu_basis(1_000), attempt=2
    )
    assert stubs.spend.Reserve(current, timeout=10).account.pending_usd_micro == 1_000

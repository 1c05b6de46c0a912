"""A retracted run's subtree takes no new spend, over the wire: no account or run is opened under
the run's account or under any account below it, and no reservation or charge is taken on an
account whose parents include the run's, each refused RUN_RETRACTED as the run's own account is;
a hold taken before the retraction is still settled. Expected values are written out here."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tests.service.support import Stubs, error_info, key, open_run
from trainledger.v1 import runs_pb2, spend_pb2

Code = grpc.StatusCode


def refusal(call: Any, request: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=10)
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata)


def account_of(stubs: Stubs, account: str, min_position: int) -> spend_pb2.Account:
    request = spend_pb2.GetAccountRequest(account=account, min_position=min_position)
    return stubs.spend.GetAccount(request, timeout=10).account


def test_no_new_account_hold_or_charge_under_a_retracted_run(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=10_000_000).state.run.run_id
    child, grandchild = f"child-{key()}", f"grandchild-{key()}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=child, parent=run_id), timeout=10)
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=grandchild, parent=child), timeout=10)
    stubs.spend.Charge(spend_pb2.ChargeRequest(account=child, charge_id="before", amount_usd_micro=900), timeout=10)
    held = spend_pb2.ReserveRequest(account=grandchild, reservation_id="held", amount_usd_micro=500)
    stubs.spend.Reserve(held, timeout=10)
    retracted = stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="bad data"), timeout=10)
    assert account_of(stubs, run_id, retracted.position).committed_usd_micro == 900

    refused = [
        (stubs.spend.OpenAccount, spend_pb2.OpenAccountRequest(account=f"new-{key()}", parent=run_id)),
        (stubs.spend.OpenAccount, spend_pb2.OpenAccountRequest(account=f"new-{key()}", parent=grandchild)),
        (stubs.runs.OpenRun, runs_pb2.OpenRunRequest(run_key=key(), parent_account=child)),
        (stubs.spend.Charge, spend_pb2.ChargeRequest(account=child, charge_id="c", amount_usd_micro=2_000_000)),
        (stubs.spend.Charge, spend_pb2.ChargeRequest(account=grandchild, charge_id="c", amount_usd_micro=1)),
        (stubs.spend.Reserve, spend_pb2.ReserveRequest(account=child, reservation_id="r", amount_usd_micro=1)),
        (stubs.spend.Reserve, spend_pb2.ReserveRequest(account=grandchild, reservation_id="r", amount_usd_micro=1)),
    ]
    for call, request in refused:
        code, reason, metadata = refusal(call, request)
        assert (code, reason, metadata["account"]) == (Code.FAILED_PRECONDITION, "RUN_RETRACTED", run_id), request

    # Opening an account that exists already is a retry, answered as before; a hold taken before
    # the retraction is still settled (the truth about money is never refused).
    again = stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=child, parent=run_id), timeout=10)
    assert not again.created
    commit = spend_pb2.CommitRequest(account=grandchild, reservation_id="held", actual_usd_micro=400)
    committed = stubs.spend.Commit(commit, timeout=10)
    assert account_of(stubs, run_id, committed.position).committed_usd_micro == 1_300
    assert account_of(stubs, run_id, committed.position).pending_usd_micro == 0


def test_a_retracted_runs_cap_is_not_changed(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=10_000_000).state.run.run_id
    retracted = stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="bad data"), timeout=10)
    for cap in (20_000_000, 5_000_000, None):
        code, reason, metadata = refusal(stubs.spend.SetCap, spend_pb2.SetCapRequest(account=run_id, cap_usd_micro=cap))
        assert (code, reason, metadata["account"]) == (Code.FAILED_PRECONDITION, "RUN_RETRACTED", run_id), cap
    assert account_of(stubs, run_id, retracted.position).cap_usd_micro == 10_000_000

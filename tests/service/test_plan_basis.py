"""A plan's cost basis is held to its amount as every other basis is: a plan of $0.10 whose basis
works out to $0.20 is refused (BASIS_AMOUNT_MISMATCH, both amounts named) and holds nothing."""

from __future__ import annotations

from tests.service.support import Stubs
from tests.service.test_bases import INVALID, account, basis, head, refusal, tokens
from trainledger.v1 import spend_pb2


def test_a_plan_whose_basis_works_out_to_another_amount_is_refused(stubs: Stubs) -> None:
    name = account(stubs)
    before = head(stubs)
    request = spend_pb2.ReservePlanRequest(
        account=name, reservation_id="plan-1", amount_usd_micro=100_000, basis=basis(tokens(50_000))
    )
    code, reason, metadata, message = refusal(stubs.spend.ReservePlan, request)
    assert (code, reason) == (INVALID, "BASIS_AMOUNT_MISMATCH")
    assert metadata == {"field": "amount_usd_micro", "amount_usd_micro": "100000", "basis_usd_micro": "200000"}
    assert "$0.20" in message and "$0.10" in message
    assert head(stubs) == before
    # The same plan with the basis it states is held.
    request.amount_usd_micro = 200_000
    held = stubs.spend.ReservePlan(request, timeout=10)
    assert held.account.pending_usd_micro == 200_000

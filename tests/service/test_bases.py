"""Cost bases add up, over the wire: the ledger computes every basis it is given with
trainledger.pricing and refuses one that does not come to its amount (INVALID_ARGUMENT,
BASIS_AMOUNT_MISMATCH, both amounts named), and a commit's basis is the usage the client says the
call really had, or none: never the reservation's estimate copied over.

Prices below: train tokens at $4.00 per million (4 micro-dollars a token), so 50,000 tokens are
$0.20; GPU time at $3.60 an hour (one micro-dollar a millisecond).
"""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest

from clients import LedgerClient
from clients.spend import hold_spend
from tests.service.support import Served, Stubs, error_info
from trainledger.v1 import common_pb2, events_pb2, spend_pb2

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def tokens(count: int, price: int = 4_000_000) -> dict[str, Any]:
    return {
        "price_sheet": "acme-2026-11",
        "tokens": [{"token_class": "train", "tokens": count, "usd_micro_per_million_tokens": price}],
    }


def gpu(milliseconds: int, price: int = 3_600_000, count: int = 1) -> dict[str, Any]:
    return {
        "price_sheet": "acme-2026-11",
        "gpu": {"gpu_milliseconds": milliseconds, "usd_micro_per_gpu_hour": price, "gpu_type": "H100",
                "gpu_count": count},
    }  # fmt: skip


def basis(document: dict[str, Any]) -> common_pb2.CostBasis:
    message = common_pb2.CostBasis(price_sheet=document["price_sheet"])
    for line in document.get("tokens", []):
        message.tokens.add(**line)
    if "gpu" in document:
        message.gpu.CopyFrom(common_pb2.GpuCost(**document["gpu"]))
    return message


def account(stubs: Stubs) -> str:
    name = f"team-{uuid.uuid4().hex[:8]}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=name), timeout=10)
    return name


def refusal(call: Any, request: Any) -> tuple[grpc.StatusCode, str, dict[str, str], str]:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=10)
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata), caught.value.details()


def reservations(stubs: Stubs, name: str) -> list[spend_pb2.Reservation]:
    request = spend_pb2.ListReservationsRequest(account=name, min_position=head(stubs))
    return list(stubs.spend.ListReservations(request, timeout=10).reservations)


def head(stubs: Stubs) -> int:
    return int(stubs.events.GetHead(events_pb2.GetHeadRequest(), timeout=10).position)


def test_a_reservation_whose_basis_works_out_to_another_amount_is_refused(stubs: Stubs) -> None:
    name = account(stubs)
    before = head(stubs)
    request = spend_pb2.ReserveRequest(
        account=name, reservation_id="r1", amount_usd_micro=100_000, basis=basis(tokens(50_000))
    )
    code, reason, metadata, message = refusal(stubs.spend.Reserve, request)
    assert (code, reason) == (INVALID, "BASIS_AMOUNT_MISMATCH")
    assert metadata == {"field": "amount_usd_micro", "amount_usd_micro": "100000", "basis_usd_micro": "200000"}
    assert "$0.20" in message and "$0.10" in message
    assert head(stubs) == before
    assert reservations(stubs, name) == []


def test_a_commit_or_charge_whose_basis_is_not_its_amount_is_refused(stubs: Stubs) -> None:
    name = account(stubs)
    estimate = basis(tokens(50_000))
    reserve = spend_pb2.ReserveRequest(account=name, reservation_id="r1", amount_usd_micro=200_000, basis=estimate)
    stubs.spend.Reserve(reserve, timeout=10)
    for actual in (150_000, 250_000):  # The estimate's basis sent again with another actual amount.
        request = spend_pb2.CommitRequest(
            account=name, reservation_id="r1", actual_usd_micro=actual, basis=basis(tokens(50_000))
        )
        code, reason, metadata, _ = refusal(stubs.spend.Commit, request)
        assert (code, reason, metadata["basis_usd_micro"], metadata["amount_usd_micro"]) == (
            INVALID,
            "BASIS_AMOUNT_MISMATCH",
            "200000",
            str(actual),
        )
        assert metadata["field"] == "actual_usd_micro"
    charge = spend_pb2.ChargeRequest(account=name, charge_id="c1", amount_usd_micro=1, basis=basis(gpu(1_000)))
    assert refusal(stubs.spend.Charge, charge)[:3] == (
        INVALID,
        "BASIS_AMOUNT_MISMATCH",
        {"field": "amount_usd_micro", "amount_usd_micro": "1", "basis_usd_micro": "1000"},
    )
    # The actual usage, 37,500 tokens, is $0.15: committed with its own basis.
    used = basis(tokens(37_500))
    committed = stubs.spend.Commit(
        spend_pb2.CommitRequest(account=name, reservation_id="r1", actual_usd_micro=150_000, basis=used), timeout=10
    )
    (held,) = reservations(stubs, name)
    assert (held.state, held.actual_usd_micro, held.actual_basis.tokens[0].tokens) == ("committed", 150_000, 37_500)
    assert committed.position > 0


@pytest.mark.parametrize(
    "document,amount",
    [
        # Each line is rounded up to the micro-dollar on its own, and the amount is exactly the sum.
        (tokens(1, price=1), 1),  # 1e-6 of a micro-dollar is one micro-dollar.
        (tokens(250_001), 1_000_004),  # 1,000,004 exactly.
        ({**tokens(1, price=1), "gpu": gpu(1)["gpu"]}, 2),  # Two lines, each rounded up: 1 + 1.
        (gpu(1_000, count=0), 1_000),  # A GPU count below 1 counts as 1.
        (gpu(1_000, count=8), 8_000),
        (gpu(1, price=1), 1),
        ({"price_sheet": "acme-2026-11"}, 123),  # A sheet with no usage lines states no amount.
    ],
)
def test_the_rounding_rule_is_exact_to_the_micro_dollar(stubs: Stubs, document: dict[str, Any], amount: int) -> None:
    name = account(stubs)
    request = spend_pb2.ChargeRequest(account=name, charge_id="c", amount_usd_micro=amount, basis=basis(document))
    assert stubs.spend.Charge(request, timeout=10).position > 0
    if document.get("tokens") or document.get("gpu"):
        for wrong in (amount - 1, amount + 1):
            request = spend_pb2.ChargeRequest(
                account=name, charge_id=f"c{wrong}", amount_usd_micro=wrong, basis=basis(document)
            )
            assert refusal(stubs.spend.Charge, request)[1] == "BASIS_AMOUNT_MISMATCH"


@pytest.fixture
def client(served: Served) -> Any:
    with LedgerClient(served.address, principal="tests", timeout_s=30.0) as opened:
        yield opened


def test_a_held_call_commits_its_actual_basis_or_none_never_the_estimate(stubs: Stubs, client: LedgerClient) -> None:
    name = account(stubs)
    with hold_spend(client, account=name, amount_usd_micro=200_000, basis=tokens(50_000)) as hold:
        hold.actual_usd_micro = 150_000  # The call's cost is known; its usage was not given.
    with hold_spend(client, account=name, amount_usd_micro=200_000, basis=tokens(50_000)) as hold:
        hold.use(tokens(30_000))  # The usage the call really had: its amount is the basis's.
    first, second = sorted(reservations(stubs, name), key=lambda r: r.position)
    assert (first.state, first.actual_usd_micro, first.HasField("actual_basis")) == ("committed", 150_000, False)
    assert (second.state, second.actual_usd_micro) == ("committed", 120_000)
    assert [line.tokens for line in second.actual_basis.tokens] == [30_000]
    assert [line.tokens for line in first.basis.tokens] == [50_000]  # The estimate stays the reservation's.

"""One cost rule on both sides of the wire: what the trainer integrations reserve and commit
(clients.integrations.pricing) and what the ledger checks a basis with (ledger.domain.basis) are
the amounts worked out by hand below, to the micro-dollar."""

from __future__ import annotations

from typing import Any

import pytest

from clients.integrations.pricing import GpuPrice, TokenPrices, basis_amount
from ledger.domain.basis import cost_usd_micro
from ledger.domain.limits import USD_MICRO_MAX

H100 = GpuPrice(3_950_000, gpu_type="H100", sheet="modal-gpu", source="https://modal.com/pricing", as_of="2025-06")
SHEET = TokenPrices({"prefill": 200_000, "sample": 600_000, "train": 600_000}, sheet="tinker", as_of="2025-10")

# (basis, amount worked out by hand)
CASES: list[tuple[dict[str, Any], int]] = [
    # 1,234,567 x 200,000 / 1,000,000 = 246,913.4 -> 246,914; 3 x 600,000 / 1,000,000 = 1.8 -> 2.
    (
        {
            "tokens": [
                {"token_class": "prefill", "tokens": 1_234_567, "usd_micro_per_million_tokens": 200_000},
                {"token_class": "sample", "tokens": 3, "usd_micro_per_million_tokens": 600_000},
            ]
        },
        246_916,
    ),
    # Each line is rounded up on its own: 1 x 1 / 1,000,000 twice is 2, not 1.
    (
        {
            "tokens": [
                {"token_class": "prefill", "tokens": 1, "usd_micro_per_million_tokens": 1},
                {"token_class": "sample", "tokens": 1, "usd_micro_per_million_tokens": 1},
            ]
        },
        2,
    ),
    # 90 s of one H100: 90,000 x 3,950,000 / 3,600,000 = 98,750 exactly.
    ({"gpu": {"gpu_milliseconds": 90_000, "usd_micro_per_gpu_hour": 3_950_000, "gpu_count": 1}}, 98_750),
    # Eight of them: 790,000; a count of 0 counts as one GPU.
    ({"gpu": {"gpu_milliseconds": 90_000, "usd_micro_per_gpu_hour": 3_950_000, "gpu_count": 8}}, 790_000),
    ({"gpu": {"gpu_milliseconds": 90_000, "usd_micro_per_gpu_hour": 3_950_000, "gpu_count": 0}}, 98_750),
    # One millisecond: 3,950,000 / 3,600,000 = 1.097 -> 2.
    ({"gpu": {"gpu_milliseconds": 1, "usd_micro_per_gpu_hour": 3_950_000, "gpu_count": 1}}, 2),
    # Token lines and a GPU line add up: 600 (1,000 train tokens at 600,000) + 1,098 (1 s of an H100: 1,097.2).
    (
        {
            "tokens": [{"token_class": "train", "tokens": 1_000, "usd_micro_per_million_tokens": 600_000}],
            "gpu": {"gpu_milliseconds": 1_000, "usd_micro_per_gpu_hour": 3_950_000, "gpu_count": 1},
        },
        1_698,
    ),
    # Nothing priced costs nothing.
    ({"tokens": []}, 0),
    # A year of 4,096 GPUs at $1,000 an hour is above ten million dollars: capped at the limit.
    (
        {"gpu": {"gpu_milliseconds": 31_536_000_000, "usd_micro_per_gpu_hour": 1_000_000_000, "gpu_count": 4_096}},
        10_000_000_000_000,
    ),
]


@pytest.mark.parametrize(("basis", "amount"), CASES)
def test_the_ledger_and_the_integrations_price_a_basis_alike(basis: dict[str, Any], amount: int) -> None:
    assert cost_usd_micro(basis) == amount
    assert basis_amount(basis) == amount


def test_the_limit_is_ten_million_dollars() -> None:
    assert USD_MICRO_MAX == 10_000_000_000_000


def test_price_sheets_make_the_basis_they_price() -> None:
    assert H100.basis(90_000) == {
        "price_sheet": "modal-gpu (2025-06)",
        "price_source": "https://modal.com/pricing",
        "gpu": {"gpu_milliseconds": 90_000, "usd_micro_per_gpu_hour": 3_950_000, "gpu_type": "H100", "gpu_count": 1},
    }
    assert H100.amount(90_000) == 98_750
    assert GpuPrice(3_950_000, gpu_count=8).amount(90_000) == 790_000
    assert SHEET.amount({"prefill": 1_234_567, "sample": 3}) == 246_916
    assert SHEET.basis({"train": 10})["tokens"] == [
        {"token_class": "train", "tokens": 10, "usd_micro_per_million_tokens": 600_000}
    ]
    with pytest.raises(KeyError, match="no price for token class 'prefill_cached'"):
        SHEET.basis({"prefill_cached": 1})

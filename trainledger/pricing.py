"""The one cost rule: what a cost basis amounts to, in integer micro-dollars, rounded up.

The ledger computes every basis it is given (a reservation's, a plan's, a commit's, a charge's) with this
rule and refuses one that does not come to its amount (ledger.domain.basis.check_basis_amount,
BASIS_AMOUNT_MISMATCH); the trainer integrations price their reservations and commits with it
(clients.integrations.pricing), so an estimate, its commit and an auditor's recomputation agree
to the micro-dollar. Standard library only: both sides of the wire import it.

A basis names its price sheet and holds token lines (tokens x micro-dollars per million tokens
of a token class) and at most one GPU line (GPU milliseconds x micro-dollars per GPU hour x GPU
count, a count below 1 counting as 1). Each line is rounded up to the micro-dollar on its own;
the sum is capped at USD_MICRO_MAX, the largest amount the ledger accepts. The amount must be that
figure exactly: no tolerance, since both sides compute it with the same integers. A basis with no
usage line (a price sheet's name alone) states no amount and is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "USD_MICRO_MAX",
    "TOKENS_PER_PRICE_UNIT",
    "MS_PER_GPU_HOUR",
    "token_line_usd_micro",
    "gpu_line_usd_micro",
    "cost_usd_micro",
]

#: The largest amount of money the ledger holds in one field: ten million dollars.
USD_MICRO_MAX = 10_000_000 * 1_000_000
TOKENS_PER_PRICE_UNIT = 1_000_000
MS_PER_GPU_HOUR = 3_600_000


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def token_line_usd_micro(tokens: int, usd_micro_per_million_tokens: int) -> int:
    """One token line's amount, rounded up."""
    return _ceil_div(tokens * usd_micro_per_million_tokens, TOKENS_PER_PRICE_UNIT)


def gpu_line_usd_micro(gpu_milliseconds: int, usd_micro_per_gpu_hour: int, gpu_count: int = 1) -> int:
    """The GPU line's amount, rounded up; a count below 1 counts as 1."""
    return _ceil_div(gpu_milliseconds * usd_micro_per_gpu_hour * max(1, gpu_count), MS_PER_GPU_HOUR)


def cost_usd_micro(basis: Mapping[str, Any]) -> int:
    """The amount a basis (its dict form: proto field names) describes, capped at USD_MICRO_MAX."""
    total = 0
    for line in basis.get("tokens") or ():
        total += token_line_usd_micro(int(line["tokens"]), int(line["usd_micro_per_million_tokens"]))
    gpu = basis.get("gpu")
    if gpu:
        total += gpu_line_usd_micro(
            int(gpu["gpu_milliseconds"]), int(gpu["usd_micro_per_gpu_hour"]), int(gpu.get("gpu_count", 1))
        )
    return min(total, USD_MICRO_MAX)

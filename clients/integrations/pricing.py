"""Price sheets: what a billable unit costs, with where the price came from and when.

Amounts are integer micro-dollars. A sheet turns usage into a structured cost basis (the shape
the ledger stores) and its amount by trainledger.pricing, the one cost rule both sides of the wire
import, so a reservation, its commit and the ledger's check of them agree to the micro-dollar.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainledger.pricing import MS_PER_GPU_HOUR, cost_usd_micro

__all__ = ["GpuPrice", "TokenPrices", "gpu_basis", "token_basis", "basis_amount"]


@dataclass(frozen=True)
class GpuPrice:
    """GPU time: micro-dollars per GPU hour for `gpu_type`, from `source` as of `as_of`."""

    usd_micro_per_gpu_hour: int
    gpu_type: str = ""
    gpu_count: int = 1
    sheet: str = ""
    source: str = ""
    as_of: str = ""

    def basis(self, gpu_milliseconds: int) -> dict[str, Any]:
        return gpu_basis(self, gpu_milliseconds)

    def amount(self, gpu_milliseconds: int) -> int:
        return basis_amount(self.basis(gpu_milliseconds))

    def milliseconds_for(self, usd_micro: int) -> int:
        """The most GPU milliseconds whose amount is at most `usd_micro` (0 for a free price: no
        bound); the inverse of the GPU line of trainledger.pricing."""
        rate = self.usd_micro_per_gpu_hour * max(1, self.gpu_count)
        return max(0, usd_micro) * MS_PER_GPU_HOUR // rate if rate > 0 else 0


@dataclass(frozen=True)
class TokenPrices:
    """Per-model token prices: micro-dollars per million tokens for each token class
    (prefill, sample, train), from `source` as of `as_of`."""

    usd_micro_per_million: Mapping[str, int] = field(default_factory=dict)
    sheet: str = ""
    source: str = ""
    as_of: str = ""

    def basis(self, tokens: Mapping[str, int]) -> dict[str, Any]:
        return token_basis(self, tokens)

    def amount(self, tokens: Mapping[str, int]) -> int:
        return basis_amount(self.basis(tokens))


def _sheet(name: str, as_of: str) -> str:
    return f"{name} ({as_of})" if as_of else name


def gpu_basis(price: GpuPrice, gpu_milliseconds: int) -> dict[str, Any]:
    return {
        "price_sheet": _sheet(price.sheet, price.as_of),
        "price_source": price.source,
        "gpu": {
            "gpu_milliseconds": int(gpu_milliseconds),
            "usd_micro_per_gpu_hour": price.usd_micro_per_gpu_hour,
            "gpu_type": price.gpu_type,
            "gpu_count": price.gpu_count,
        },
    }


def token_basis(prices: TokenPrices, tokens: Mapping[str, int]) -> dict[str, Any]:
    lines = []
    for token_class, count in tokens.items():
        if token_class not in prices.usd_micro_per_million:
            raise KeyError(f"no price for token class {token_class!r} on sheet {prices.sheet!r}")
        lines.append(
            {
                "token_class": token_class,
                "tokens": int(count),
                "usd_micro_per_million_tokens": prices.usd_micro_per_million[token_class],
            }
        )
    return {"price_sheet": _sheet(prices.sheet, prices.as_of), "price_source": prices.source, "tokens": lines}


def basis_amount(basis: Mapping[str, Any]) -> int:
    """The amount of a basis in micro-dollars, rounded up: trainledger.pricing's rule, the one the
    ledger checks every basis with."""
    return cost_usd_micro(basis)

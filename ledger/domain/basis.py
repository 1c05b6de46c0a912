"""Cost basis: how an amount was worked out, never a bare number.

A basis names its price sheet (name and source) and either token classes x price per million
tokens, or GPU time x price per GPU hour. `cost_usd_micro` computes the amount from a basis with
integer arithmetic, rounding up, so clients and auditors get the same figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.domain.errors import InvalidArgumentError
from ledger.domain.limits import MAP_ENTRIES_MAX, STEP_MAX, USD_MICRO_MAX, check_id, check_int, check_text, check_usd_micro

__all__ = ["TOKEN_CLASSES", "check_basis", "cost_usd_micro"]

TOKEN_CLASSES = ("prefill", "sample", "train")


def check_basis(basis: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate and normalise a basis: {price_sheet, price_source, tokens: [{token_class, tokens,
    usd_micro_per_million_tokens}], gpu: {gpu_milliseconds, usd_micro_per_gpu_hour, gpu_type,
    gpu_count} | None}. An empty basis is allowed (an amount known only in total)."""
    if basis is None:
        return {}
    if not isinstance(basis, Mapping):
        raise InvalidArgumentError("basis must be a mapping", reason="INVALID_BASIS")
    unknown = set(basis) - {"price_sheet", "price_source", "tokens", "gpu"}
    if unknown:
        raise InvalidArgumentError(f"basis has unknown fields {sorted(unknown)}", reason="INVALID_BASIS")
    normal: dict[str, Any] = {}
    if basis.get("price_sheet"):
        normal["price_sheet"] = check_text(basis["price_sheet"], "basis.price_sheet", limit=256)
    if basis.get("price_source"):
        normal["price_source"] = check_text(basis["price_source"], "basis.price_source", limit=1024)
    lines = basis.get("tokens") or []
    if len(lines) > MAP_ENTRIES_MAX:
        raise InvalidArgumentError("basis has too many token lines", reason="INVALID_BASIS")
    if lines:
        normal["tokens"] = [
            {
                "token_class": check_id(line.get("token_class", ""), "basis.tokens.token_class"),
                "tokens": check_int(line.get("tokens", 0), "basis.tokens.tokens", maximum=STEP_MAX),
                "usd_micro_per_million_tokens": check_usd_micro(
                    line.get("usd_micro_per_million_tokens", 0), "basis.tokens.usd_micro_per_million_tokens"
                ),
            }
            for line in lines
        ]
    gpu = basis.get("gpu")
    if gpu:
        normal["gpu"] = {
            "gpu_milliseconds": check_int(gpu.get("gpu_milliseconds", 0), "basis.gpu.gpu_milliseconds", maximum=STEP_MAX),
            "usd_micro_per_gpu_hour": check_usd_micro(gpu.get("usd_micro_per_gpu_hour", 0), "basis.gpu.usd_micro_per_gpu_hour"),
            "gpu_type": check_text(gpu.get("gpu_type", ""), "basis.gpu.gpu_type", limit=256),
            "gpu_count": check_int(gpu.get("gpu_count", 1), "basis.gpu.gpu_count", minimum=0, maximum=4096),
        }
    return normal


def cost_usd_micro(basis: Mapping[str, Any]) -> int:
    """The amount a basis describes, in micro-dollars, rounded up."""
    total = 0
    for line in basis.get("tokens") or []:
        total += -(-line["tokens"] * line["usd_micro_per_million_tokens"] // 1_000_000)
    gpu = basis.get("gpu")
    if gpu:
        count = gpu.get("gpu_count", 1) or 1
        total += -(-gpu["gpu_milliseconds"] * gpu["usd_micro_per_gpu_hour"] * count // 3_600_000)
    return min(total, USD_MICRO_MAX)

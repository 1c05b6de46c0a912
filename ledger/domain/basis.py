"""Cost basis: how an amount was worked out, never a bare number.

A basis names its price sheet (name and source) and either token classes x price per million
tokens, or GPU time x price per GPU hour. `cost_usd_micro` computes the amount from a basis with
integer arithmetic, rounding up, so clients and auditors get the same figure; `check_basis_amount`
holds every basis that states usage to that figure, exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ledger.domain.errors import Invalid
from ledger.domain.limits import MAP_ENTRIES_MAX, STEP_MAX, check_id, check_int, check_text, check_usd_micro
from ledger.domain.reasons import Reason
from trainledger.bills import usd_text
from trainledger.pricing import cost_usd_micro

__all__ = [
    "TOKEN_CLASSES",
    "CostBasis",
    "GpuLine",
    "TokenLine",
    "check_basis",
    "basis_map",
    "check_basis_amount",
    "cost_basis",
    "cost_usd_micro",
]

TOKEN_CLASSES = ("prefill", "sample", "train")


class TokenLine(msgspec.Struct, frozen=True):
    """A basis's line of tokens of one class at a price per million."""

    token_class: str
    tokens: int
    usd_micro_per_million_tokens: int


class GpuLine(msgspec.Struct, frozen=True):
    """A basis's GPU time at a price per GPU hour."""

    gpu_milliseconds: int
    usd_micro_per_gpu_hour: int
    gpu_type: str
    gpu_count: int


class CostBasis(msgspec.Struct, frozen=True, omit_defaults=True):
    """A basis as check_basis normalises it. Encoded (msgspec.to_builtins, or in a snapshot) it is
    the very map check_basis gives: its fields in that order, an empty one left out, so the
    events and snapshots that hold a basis keep their stored shape."""

    price_sheet: str = ""
    price_source: str = ""
    tokens: list[TokenLine] = msgspec.field(default_factory=list)
    gpu: GpuLine | None = None


def cost_basis(basis: Mapping[str, Any]) -> CostBasis:
    """The CostBasis of a basis map (one check_basis normalised, or one stored in an event)."""
    return msgspec.convert(basis, CostBasis) if basis else CostBasis()


def basis_map(basis: CostBasis) -> dict[str, Any]:
    """The map an event stores for `basis`: the one check_basis gives (see CostBasis)."""
    value: dict[str, Any] = msgspec.to_builtins(basis)
    return value


def check_basis(basis: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate and normalise a basis: {price_sheet, price_source, tokens: [{token_class, tokens,
    usd_micro_per_million_tokens}], gpu: {gpu_milliseconds, usd_micro_per_gpu_hour, gpu_type,
    gpu_count} | None}. An empty basis is allowed (an amount known only in total)."""
    if basis is None or (type(basis) is dict and not basis):
        return {}  # The common case of a commit: no basis beyond the reservation's.
    if not isinstance(basis, Mapping):
        raise Invalid("basis must be a mapping", reason=Reason.INVALID_BASIS)
    unknown = set(basis) - {"price_sheet", "price_source", "tokens", "gpu"}
    if unknown:
        raise Invalid(f"basis has unknown fields {sorted(unknown)}", reason=Reason.INVALID_BASIS)
    normal: dict[str, Any] = {}
    if basis.get("price_sheet"):
        normal["price_sheet"] = check_text(basis["price_sheet"], "basis.price_sheet", limit=256)
    if basis.get("price_source"):
        normal["price_source"] = check_text(basis["price_source"], "basis.price_source", limit=1024)
    lines = basis.get("tokens") or []
    if len(lines) > MAP_ENTRIES_MAX:
        raise Invalid("basis has too many token lines", reason=Reason.INVALID_BASIS)
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
            "gpu_milliseconds": check_int(
                gpu.get("gpu_milliseconds", 0), "basis.gpu.gpu_milliseconds", maximum=STEP_MAX
            ),
            "usd_micro_per_gpu_hour": check_usd_micro(
                gpu.get("usd_micro_per_gpu_hour", 0), "basis.gpu.usd_micro_per_gpu_hour"
            ),
            "gpu_type": check_text(gpu.get("gpu_type", ""), "basis.gpu.gpu_type", limit=256),
            "gpu_count": check_int(gpu.get("gpu_count", 1), "basis.gpu.gpu_count", minimum=0, maximum=4096),
        }
    return normal


def check_basis_amount(basis: Mapping[str, Any], amount_usd_micro: int, field: str) -> None:
    """Refuse a basis (normalised by check_basis) that states usage, token lines or a GPU line, and
    does not work out to `amount_usd_micro` exactly, by trainledger.pricing's rule (each line
    rounded up to the micro-dollar, the sum capped at USD_MICRO_MAX). A basis without usage lines
    (none, or a price sheet's name alone) states no amount and is not held to one. `field` names
    the amount. Raises Invalid (BASIS_AMOUNT_MISMATCH) naming both amounts."""
    if not basis.get("tokens") and not basis.get("gpu"):
        return
    computed = cost_usd_micro(basis)
    if computed != amount_usd_micro:
        raise Invalid(
            f"the basis works out to {usd_text(computed)} (trainledger.pricing), not the"
            f" {field} {usd_text(amount_usd_micro)}: a basis states the usage the amount is for",
            reason=Reason.BASIS_AMOUNT_MISMATCH,
            field=field,
            amount_usd_micro=amount_usd_micro,
            basis_usd_micro=computed,
        )

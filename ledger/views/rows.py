"""Row decoders of the views: each turns one row of a view table into a read model of
ledger.views.models (stored JSON decoded, epochs as UTC datetimes, NULLs as empty values).

They run no query and hold no state, so ledger.views.queries keeps to what it asks of the
tables. Where several queries select the same columns for a decoder, the column list
(CHECKPOINT_COLUMNS, VERSION_COLUMNS, PROMOTION_COLUMNS) sits beside it, in the order it unpacks.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from ledger.views.models import (
    BillTotals,
    Checkpoint,
    GateVerdict,
    ModelVersion,
    Promotion,
    Reservation,
    SpendTotals,
    StateHandle,
)

__all__ = [
    "CHECKPOINT_COLUMNS",
    "PROMOTION_COLUMNS",
    "VERSION_COLUMNS",
    "decode",
    "optional_utc_time",
    "remaining",
    "to_checkpoint",
    "to_model_version",
    "to_promotion",
    "to_reservation",
    "to_spend_totals",
    "utc_time",
]

decode = msgspec.json.decode


def optional_utc_time(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def utc_time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def to_spend_totals(row: Any, bill: BillTotals | None = None) -> SpendTotals:
    cap, committed, pending, overrun, presumed = row
    return SpendTotals(
        cap_usd_micro=cap,
        committed_usd_micro=committed,
        pending_usd_micro=pending,
        remaining_usd_micro=remaining(cap, committed + presumed, pending),
        overrun_usd_micro=overrun,
        bill=bill,
        presumed_usd_micro=presumed,
    )


def remaining(cap: int | None, spent: int, pending: int) -> int | None:
    """What a cap leaves: the cap less what was spent (committed and presumed) and held."""
    return None if cap is None else max(0, cap - spent - pending)


def _verdict(stored: str) -> GateVerdict | None:
    verdict = decode(stored)
    if not verdict:
        return None
    return GateVerdict(
        passed=bool(verdict.get("passed")), reason=str(verdict.get("reason", "")), stats=verdict.get("stats") or {}
    )


def to_promotion(row: Any) -> Promotion:
    version, previous, kind, verdict, reason, at, principal, position = row
    return Promotion(
        version=version,
        previous=previous or 0,
        kind=kind,
        verdict=_verdict(verdict),
        reason=reason or "",
        at=utc_time(at),
        principal=principal or "",
        position=position,
    )


CHECKPOINT_COLUMNS = "attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at, expires_at, digest"


def to_checkpoint(row: Any) -> Checkpoint:
    attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at, expires_at, digest = row
    return Checkpoint(
        attempt=attempt,
        step=step,
        handle=StateHandle(backend=backend, uri=uri, fidelity=fidelity),
        sampler_uri=sampler_uri or "",
        final=bool(final),
        saved_at=utc_time(saved_at),
        expires_at=optional_utc_time(expires_at),
        digest=digest or "",
    )


def to_reservation(row: Any) -> Reservation:
    (
        reservation_id,
        kind,
        state,
        amount,
        actual,
        overrun,
        basis,
        actual_basis,
        reason,
        attempt,
        reserved_at,
        settled_at,
        expires_at,
        position,
    ) = row
    return Reservation(
        reservation_id=reservation_id,
        kind=kind,
        state=state,
        amount_usd_micro=amount or 0,
        actual_usd_micro=actual or 0,
        overrun_usd_micro=overrun or 0,
        basis=decode(basis),
        actual_basis=decode(actual_basis) or None,
        reason=reason or "",
        attempt=attempt or 0,
        reserved_at=utc_time(reserved_at),
        settled_at=optional_utc_time(settled_at),
        expires_at=optional_utc_time(expires_at),
        position=position,
    )


def to_model_version(row: Any) -> ModelVersion:
    family, version, uri, digest, run_id, step, metadata, registered_at = row
    return ModelVersion(
        family=family,
        version=version,
        artifact_uri=uri,
        digest=digest,
        source_run_id=run_id or "",
        source_step=step or 0,
        metadata=decode(metadata),
        registered_at=utc_time(registered_at),
    )


VERSION_COLUMNS = "family, version, artifact_uri, digest, source_run_id, source_step, metadata, registered_at"
PROMOTION_COLUMNS = "version, previous, kind, verdict, reason, at, principal, position"

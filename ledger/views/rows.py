"""Row decoders of the views: each turns one row of a view table into a read model of
ledger.views.models (stored JSON decoded, epochs as UTC datetimes, NULLs as empty values).

They run no query and hold no state, so ledger.views.queries keeps to what it asks of the
tables. Where several queries select the same columns for a decoder, the column list
(CHECKPOINT_COLUMNS, VERSION_COLUMNS, PROMOTION_SELECT ...) sits beside it, in the order it unpacks.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from ledger.views.models import (
    Alias,
    BillTotals,
    Checkpoint,
    GateEvidence,
    GateVerdict,
    ModelVersion,
    PlanHold,
    Promotion,
    Reservation,
    Retirement,
    SpendTotals,
    StateHandle,
)

__all__ = [
    "CHECKPOINT_COLUMNS",
    "PROMOTION_SELECT",
    "ALIAS_COLUMNS",
    "RETIREMENT_COLUMNS",
    "to_alias",
    "to_retirement",
    "VERSION_COLUMNS",
    "decode",
    "optional_utc_time",
    "remaining",
    "to_plan_hold",
    "to_checkpoint",
    "to_model_version",
    "to_promotion",
    "to_verdict",
    "to_reservation",
    "to_spend_totals",
    "utc_time",
]

decode = msgspec.json.decode


def optional_utc_time(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def utc_time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def to_spend_totals(row: Any, bill: BillTotals | None = None, plan: PlanHold | None = None) -> SpendTotals:
    cap, committed, pending, overrun, presumed = row
    return SpendTotals(
        cap_usd_micro=cap,
        committed_usd_micro=committed,
        pending_usd_micro=pending,
        remaining_usd_micro=remaining(cap, committed + presumed, pending),
        overrun_usd_micro=overrun,
        bill=bill,
        plan=plan,
        presumed_usd_micro=presumed,
    )


def to_plan_hold(row: Any) -> PlanHold | None:
    """The plan hold of a row of view_reservations (reservation_id, state, amount, actual), where
    a plan's `actual` counts what its holds drew; None for no row."""
    if row is None:
        return None
    reservation_id, state, planned, drawn = row
    held = planned - drawn if state == "pending" else 0
    return PlanHold(
        reservation_id=reservation_id,
        state=state,
        planned_usd_micro=planned,
        drawn_usd_micro=drawn,
        held_usd_micro=held,
    )


def remaining(cap: int | None, spent: int, pending: int) -> int | None:
    """What a cap leaves: the cap less what was spent (committed and presumed) and held."""
    return None if cap is None else max(0, cap - spent - pending)


def _verdict(stored: str) -> GateVerdict | None:
    return to_verdict(decode(stored))


def to_verdict(verdict: dict[str, Any] | None) -> GateVerdict | None:
    """A verdict as recorded (a promotion's event) as a GateVerdict; None for none."""
    if not verdict:
        return None
    # A verdict recorded before the ledger evaluated gate rules has no mode: it was asserted.
    return GateVerdict(
        passed=bool(verdict.get("passed")),
        reason=str(verdict.get("reason", "")),
        stats=verdict.get("stats") or {},
        mode=str(verdict.get("mode") or "asserted"),
        rule=str(verdict.get("rule") or ""),
        evidence=tuple(msgspec.convert(e, GateEvidence) for e in verdict.get("evidence") or ()),
    )


def to_promotion(row: Any) -> Promotion:
    version, previous, kind, verdict, reason, at, principal, position, refusal, expected_current = row
    return Promotion(
        version=version,
        previous=previous or 0,
        kind=kind,
        verdict=_verdict(verdict),
        reason=reason or "",
        at=utc_time(at),
        principal=principal or "",
        position=position,
        refusal=refusal or "",
        expected_current=expected_current or 0,
    )


ALIAS_COLUMNS = "alias, version, moved_at, principal, position"
RETIREMENT_COLUMNS = "reason, at, principal, position"


def to_alias(row: Any) -> Alias:
    alias, version, moved_at, principal, position = row
    return Alias(
        alias=alias, version=version, moved_at=utc_time(moved_at), principal=principal or "", position=position
    )


def to_retirement(row: Any) -> Retirement:
    reason, at, principal, position = row
    return Retirement(reason=reason, at=utc_time(at), principal=principal or "", position=position)


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
#: A family's history, with each refused promotion's reason (filter on p.family).
PROMOTION_SELECT = (
    "SELECT p.version, p.previous, p.kind, p.verdict, p.reason, p.at, p.principal, p.position, r.refusal,"
    " r.expected_current FROM view_promotions p"
    " LEFT JOIN view_refusals r ON r.family = p.family AND r.position = p.position"
)

"""Reads of the spend view: an account's totals, its audit trail, the holds pending and the tree of
accounts; and the decoders of its rows (a run's spend, a plan hold, an audit-trail entry)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger.views.bills.reads import BillReads
from ledger.views.models import Account, BillTotals, PlanHold, Reservation, ReservationPage, SpendTotals
from ledger.views.rows import decode, optional_utc_time, utc_time
from ledger.views.store import Query

__all__ = [
    "PLAN_HOLD_ROW",
    "PRESUMED",
    "SPEND_ROW",
    "SpendReads",
    "remaining",
    "to_plan_hold",
    "to_reservation",
    "to_spend_totals",
]

# An account's totals with what the ledger presumed spent for its abandoned holds.
PRESUMED = "COALESCE((SELECT p.presumed FROM view_presumed p WHERE p.account = a.account), 0)"
SPEND_ROW = f"SELECT a.cap, a.committed, a.pending, a.overrun, {PRESUMED} FROM view_accounts a WHERE a.account = ?"
# An account's latest plan hold (ledger.domain.plans): its row's `actual` counts what was drawn.
PLAN_HOLD_ROW = (
    "SELECT reservation_id, state, amount, actual FROM view_reservations WHERE account = ? AND kind = 'plan'"
    " ORDER BY position DESC LIMIT 1"
)
_ACCOUNT_COLUMNS = f"a.account, a.parent, a.cap, a.committed, a.pending, a.overrun, {PRESUMED}"


def remaining(cap: int | None, spent: int, pending: int) -> int | None:
    """What a cap leaves: the cap less what was spent (committed and presumed) and held."""
    return None if cap is None else max(0, cap - spent - pending)


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


class SpendReads:
    """Reads of the spend view over `query`; an account's bill beside its estimate is `bills`'."""

    def __init__(self, query: Query, bills: BillReads) -> None:
        self.query = query
        self.bills = bills

    def _to_account(self, row: Any, *, plan: PlanHold | None = None) -> Account:
        """A row of _ACCOUNT_COLUMNS as an Account, with its bill rolled up."""
        account, parent, cap, committed, pending, overrun, presumed = row
        return Account(
            account=account,
            parent=parent or "",
            cap_usd_micro=cap,
            committed_usd_micro=committed,
            pending_usd_micro=pending,
            remaining_usd_micro=remaining(cap, committed + presumed, pending),
            overrun_usd_micro=overrun,
            bill=self.bills.bill_totals(account, rolled_up=True),
            plan=plan,
            presumed_usd_micro=presumed,
        )

    def account(self, name: str) -> Account | None:
        row = self.query.row(f"SELECT {_ACCOUNT_COLUMNS} FROM view_accounts a WHERE a.account = ?", (name,))
        if row is None:
            return None
        return self._to_account(row, plan=to_plan_hold(self.query.row(PLAN_HOLD_ROW, (row[0],))))

    def reservations(self, account: str, *, limit: int, after_position: int = 0) -> ReservationPage:
        """Up to `limit` entries of the account's audit trail in log order (reservations, refusals
        and charges) after `after_position`."""
        rows = self.query.rows(
            "SELECT reservation_id, kind, state, amount, actual, overrun, basis, actual_basis, reason, attempt,"
            " reserved_at, settled_at, expires_at, position FROM view_reservations WHERE account = ?"
            " AND position > ? ORDER BY position LIMIT ?",
            (account, after_position, limit),
        )
        reservations = tuple(to_reservation(row) for row in rows)
        # A full page may be followed by an empty one.
        return ReservationPage(
            reservations=reservations, after_position=reservations[-1].position if len(rows) == limit else None
        )

    def latest_holds(self, account: str, *, newest: int, pending_max: int) -> tuple[list[Reservation], int, int]:
        """The account's pending entries (the latest `pending_max`) then its latest `newest` other
        ones, each newest first, and how many entries and pending ones it has in all."""
        select = (
            "SELECT reservation_id, kind, state, amount, actual, overrun, basis, actual_basis, reason, attempt,"
            " reserved_at, settled_at, expires_at, position FROM view_reservations WHERE account = ? AND state {}"
            " 'pending' ORDER BY position DESC LIMIT ?"
        )
        pending = self.query.rows(select.format("="), (account, pending_max))
        others = self.query.rows(select.format("<>"), (account, newest))
        counted = self.query.row(
            "SELECT COUNT(*), COUNT(CASE WHEN state = 'pending' THEN 1 END) FROM view_reservations WHERE account = ?",
            (account,),
        )
        total, pending_count = (int(counted[0]), int(counted[1])) if counted else (0, 0)
        return [to_reservation(row) for row in (*pending, *others)], total, pending_count

    def holds_pending(self) -> tuple[int, int]:
        """How many holds are pending and their amount in micro-dollars."""
        row = self.query.row("SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM view_reservations WHERE state = 'pending'")
        return (int(row[0]), int(row[1])) if row is not None else (0, 0)

    def accounts_with_overdue_holds(self, now: datetime) -> list[str]:
        return [
            r[0]
            for r in self.query.rows(
                "SELECT DISTINCT account FROM view_reservations WHERE state = 'pending' AND expires_at <= ?",
                (now.timestamp(),),
            )
        ]

    def account_tree(self, limit: int) -> tuple[Account, ...]:
        """Every account that is not a run's own (those are named by their run's id), with its
        totals, parents before children (depth first, children by name); at most `limit`. An
        account whose parent is not among them is a root."""
        rows = {
            row[0]: row
            for row in self.query.rows(
                f"SELECT {_ACCOUNT_COLUMNS} FROM view_accounts a"
                " WHERE NOT EXISTS (SELECT 1 FROM view_runs r WHERE r.run_id = a.account)"
            )
        }
        children: dict[str, list[str]] = {}
        for account, row in rows.items():
            parent = row[1] or ""
            children.setdefault(parent if parent in rows else "", []).append(account)
        ordered: list[str] = []
        stack = sorted(children.get("", ()), reverse=True)
        while stack and len(ordered) < limit:
            account = stack.pop()
            ordered.append(account)
            stack.extend(sorted(children.get(account, ()), reverse=True))
        return tuple(self._to_account(rows[name]) for name in ordered)

"""The spend view's tables: accounts and every reservation, refusal and charge (the audit trail),
and what the ledger presumed spent for abandoned holds, per account (view_presumed)."""

from __future__ import annotations

from ledger.views.store import Table

__all__ = ["SPEND_TABLES"]


SPEND_TABLES: dict[str, Table] = {
    "view_accounts": Table(
        {"account": str, "parent": str, "cap": int, "committed": int, "pending": int, "overrun": int, "position": int},
        ("account",),
        [("parent",)],
        "spend",
    ),
    # What the ledger charged for abandoned holds (SpendSettled, less what late commits replaced),
    # per account, its parents' rolled up: a table of its own, so a file made before it gets it.
    "view_presumed": Table({"account": str, "presumed": int}, ("account",), [], "spend"),
    "view_reservations": Table(
        {
            "account": str,
            "reservation_id": str,
            "kind": str,
            "state": str,
            "amount": int,
            "actual": int,
            "overrun": int,
            "basis": str,
            "actual_basis": str,
            "reason": str,
            "attempt": int,
            "reserved_at": float,
            "settled_at": float,
            "expires_at": float,
            "position": int,
        },
        ("account", "reservation_id"),
        # An account's plan hold is found by its kind without a walk of its other reservations.
        [("state", "expires_at"), ("account", "position"), ("account", "kind", "position")],
        "spend",
    ),
}

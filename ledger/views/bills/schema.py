"""The bill view's tables: providers' bill lines, the sessions runs are linked to, and the spend
the trainers committed by hour and token class, which a bill is compared with
(ledger.views.bills.reads)."""

from __future__ import annotations

from ledger.views.store import Table

__all__ = ["BILL_TABLES"]


BILL_TABLES: dict[str, Table] = {
    "view_bill_lines": Table(
        {
            "provider": str,
            "line_id": str,
            "start": float,
            "end_at": float,
            "amount": int,
            "amount_text": str,
            "quantities": str,
            "run_id": str,
            "account": str,
            "session_id": str,
            "tags": str,
            "description": str,
            "restated": int,
            "position": int,
        },
        ("provider", "line_id", "start", "end_at"),
        [("run_id",), ("provider", "session_id"), ("account",)],
        "bill",
    ),
    "view_bill_providers": Table(
        {
            "provider": str,
            "lines": int,
            "restatements": int,
            "cost_data_through": float,
            "first_start": float,
            "last_end": float,
            "position": int,
        },
        ("provider",),
        [],
        "bill",
    ),
    "view_run_sessions": Table(
        {"provider": str, "session_id": str, "run_id": str, "attempt": int, "position": int},
        ("provider", "session_id"),
        [("run_id",)],
        "bill",
    ),
    "view_spend_hours": Table(
        {"account": str, "hour": int, "committed": int, "adjusted": int},
        ("account", "hour"),
        [],
        "bill",
    ),
    "view_spend_tokens": Table(
        {"account": str, "hour": int, "token_class": str, "tokens": int},
        ("account", "hour", "token_class"),
        [],
        "bill",
    ),
}
